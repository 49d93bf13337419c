/* demo.h: `infertop demo`, a local ring of `inferd serve` processes on
 * loopback with the embedded model, a light continuous load, and the
 * dashboard on it. Everything it starts is stopped when it exits.
 */
#ifndef DEMO_H
#define DEMO_H

/* argv[0] is "demo". Returns an exit code (cli.h). */
int demo_main(int argc, char **argv);

#endif
