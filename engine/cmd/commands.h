/* commands.h: inferd's verbs. Each takes the arguments after the verb
 * (argv[0] is the verb) and returns the process exit status: 0 ok,
 * 1 runtime failure, 2 bad usage. */
#ifndef COMMANDS_H
#define COMMANDS_H

int cmd_eval(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_quality(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);

#endif
