/* run.h: a headless verb run from a word list, as main() would run it. */
#ifndef TEST_CLI_RUN_H
#define TEST_CLI_RUN_H

/* args ends with NULL (at most 15 words); returns the verb's exit code. */
int cli_test_run(int (*verb)(int, char **), const char *const *args);

#endif
