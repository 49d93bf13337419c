/* demo.h: `infertop demo`, a local ring of `inferd serve` processes on
 * loopback with the embedded model, a light continuous load, and the
 * dashboard on it. Everything it starts is stopped when it exits.
 */
#ifndef DEMO_H
#define DEMO_H

/* Stages of the demo ring at most (fewer when the embedded model has fewer
 * layers: a stage holds one at least); --stages' range (engine/proto/
 * opt_table.c, OPT_STAGES), whose default is the ring's by default. */
#define DEMO_STAGES_MAX 8

/* argv[0] is "demo". Returns an exit code (cli.h). */
int demo_main(int argc, char **argv);

#endif
