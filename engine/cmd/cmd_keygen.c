/* cmd_keygen.c: `inferd keygen`, a CURVE key pair for a node or a client.
 * The node's PREFIX.key goes to --curve-secret; a client's PREFIX.pub goes
 * into the node's --curve-clients directory. */
#include <getopt.h>
#include <stdio.h>

#include "commands.h"
#include "engine/proto/curve.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: inferd keygen [--out PREFIX]\n\n"
                 "Writes a CURVE key pair: PREFIX.key (public and secret key, mode 0600)\n"
                 "and PREFIX.pub (public key). Existing files are never overwritten.\n\n"
                 "  --out PREFIX  path prefix of the two files (default: inferd)\n"
                 "  --help        this text\n");
}

int cmd_keygen(int argc, char **argv)
{
    static const struct option options[] = {
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *prefix = "inferd";
    char err[512];
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (c == 'o') {
            prefix = optarg;
        } else if (c == 'h') {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "inferd keygen: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    curve_keypair kp;
    if (curve_keypair_new(&kp, err, sizeof err) ||
        curve_keypair_write(&kp, prefix, err, sizeof err)) {
        fprintf(stderr, "inferd keygen: %s\n", err);
        return 1;
    }
    printf("wrote %s.key (secret, mode 0600) and %s.pub\npublic key: %s\n", prefix, prefix,
           kp.public_key);
    return 0;
}
