/* version.h: the version inferd reports (and the protocol's peers see). */
#ifndef VERSION_H
#define VERSION_H

#define INFERD_VERSION "0.1.0"

#endif
