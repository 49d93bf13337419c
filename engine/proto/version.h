/* version.h: the version of inferd and infertop, the one place it is
 * written: both programs report it, the protocol's peers see it, and the
 * man pages get it at build time (Makefile, MAN_SUBST). */
#ifndef VERSION_H
#define VERSION_H

#define INFERD_VERSION "0.1.0"

#endif
