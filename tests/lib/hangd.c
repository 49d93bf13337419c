/* hangd: a TCP server that accepts connections and never answers, for
 * the tests of connect timeouts (an SSH client waits for a banner that
 * never comes).
 *
 *   hangd ADDR PORT
 *
 * Listens on ADDR:PORT (a 127.0.0.x address), prints "ready" on stdout
 * once listening, then accepts every connection and holds it open, silent,
 * until killed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: hangd ADDR PORT\n");
        return 2;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
        fprintf(stderr, "hangd: '%s' is not an IPv4 address\n", argv[1]);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0) {
        perror("hangd");
        return 1;
    }
    puts("ready");
    fflush(stdout);
    /* Accepted sockets are kept (never closed, never read): the peer sees
     * an open connection that stays silent. */
    for (;;) {
        if (accept(fd, NULL, NULL) < 0) {
            perror("hangd: accept");
            sleep(1);
        }
    }
}
