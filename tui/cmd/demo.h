/* demo.h: `infertop demo`, a local ring of `inferd serve` processes on
 * loopback with the embedded model, a light continuous load, and the
 * dashboard on it. Everything it starts is stopped when it exits.
 */
#ifndef DEMO_H
#define DEMO_H

/* argv[0] is "demo". Returns an exit code (cli.h). */
int demo_main(int argc, char **argv);

/* A bare `infertop` found no cluster file (why: where it looked): tells
 * how to get one and, when asked on a terminal, starts the demo. Returns
 * an exit code: CLI_ERROR unless the demo ran. */
int demo_offer(const char *why);

#endif
