/* cmd_keygen.c: `inferd keygen`, a CURVE key pair for a node or a client.
 * The node's PREFIX.key goes to --curve-secret; a client's PREFIX.pub goes
 * into the node's --curve-clients directory. */
#include <stdio.h>

#include "args.h"
#include "commands.h"
#include "engine/proto/curve.h"

int cmd_keygen(int argc, char **argv)
{
    opt_vals v;
    int rc = args_parse(OPT_V_KEYGEN, argc, argv, &v);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    const char *prefix = opt_str(&v, OPT_KEY_OUT);
    char err[512];
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
