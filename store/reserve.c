/* reserve.c: room kept on the database's disk for the ends of runs.
 *
 * A run that fills the disk must still be able to record how it ended,
 * or it stays `running` and the next process to open the database calls
 * it aborted by a dead process. A WAL database writes every commit, even
 * an update in place, as new frames at the end of the -wal file, so room
 * inside the database cannot help: the room is a file of STORE_RESERVE
 * bytes beside it, allocated when a run begins and unlinked at once (the
 * open descriptor holds the blocks, and a crash frees them). On a full
 * disk the writer closes it and writes only the ends of runs. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"

int store_reserve_take(store *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->lock);
    int held = s->reserve_fd >= 0;
    pthread_mutex_unlock(&s->lock);
    if (held)
        return 0;
    size_t len = strlen(s->path);
    char *name = malloc(len + sizeof "-reserve.XXXXXX");
    if (!name) {
        store_errf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(name, s->path, len);
    memcpy(name + len, "-reserve.XXXXXX", sizeof "-reserve.XXXXXX");
    int fd = mkstemp(name);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0) {
        unlink(name);
        /* posix_fallocate returns the error; blocks written, not a sparse
         * file, so the room is really taken. */
        e = posix_fallocate(fd, 0, STORE_RESERVE);
    }
    if (e) {
        if (e == ENOSPC)
            store_errf(err, errlen,
                       "the disk holding %s has no room for the %d KiB a run keeps "
                       "for its end",
                       s->path, STORE_RESERVE / 1024);
        else
            store_errf(err, errlen, "keeping room beside %s for the run's end: %s", s->path,
                       strerror(e));
        if (fd >= 0)
            close(fd);
        free(name);
        return -1;
    }
    free(name);
    pthread_mutex_lock(&s->lock);
    int spare = s->reserve_fd >= 0 ? fd : -1; /* another thread's run took one meanwhile */
    if (spare < 0)
        s->reserve_fd = fd;
    s->disk_full = 0;
    pthread_mutex_unlock(&s->lock);
    if (spare >= 0)
        close(spare);
    return 0;
}

int store_reserve_release(store *s)
{
    pthread_mutex_lock(&s->lock);
    int fd = s->reserve_fd;
    s->reserve_fd = -1;
    s->disk_full = 1;
    pthread_mutex_unlock(&s->lock);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}
