/* tokwork.c: the tokenizer's thread (see tokwork.h). */
#include "tokwork.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tokwork {
    const tokenizer *tok;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    int pipe[2]; /* the thread writes a byte when it has finished a prompt */
    /* Under mu. busy: a prompt is submitted and not yet taken or, once
     * cancelled, not yet finished. */
    int busy, encoding, done, cancelled, stop;
    uint64_t tag;
    char *text;
    int flags; /* tok_tokenize's */
    int *ids;
    int n;
};

/* Frees the prompt and its ids: the thread is free again. Under mu. */
static void clear(tokwork *w)
{
    free(w->text);
    free(w->ids);
    w->text = NULL;
    w->ids = NULL;
    w->busy = w->encoding = w->done = w->cancelled = 0;
}

static void *work(void *arg)
{
    tokwork *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && !(w->busy && !w->encoding && !w->done))
            pthread_cond_wait(&w->wake, &w->mu);
        if (w->stop)
            break;
        w->encoding = 1;
        const char *text = w->text;
        int flags = w->flags;
        pthread_mutex_unlock(&w->mu);
        char err[160];
        int *ids = NULL;
        int n = tok_tokenize(w->tok, text, strlen(text), flags, &ids, err, sizeof err);
        if (n < 0) {
            free(ids);
            ids = NULL;
        }
        pthread_mutex_lock(&w->mu);
        w->encoding = 0;
        w->ids = ids;
        w->n = n;
        w->done = 1;
        if (w->cancelled)
            clear(w);
        /* A full pipe already says there is something to look at. */
        ssize_t wrote = write(w->pipe[1], "", 1);
        (void)wrote;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int tokwork_start(tokwork **out, const tokenizer *tok, char *err, size_t errlen)
{
    tokwork *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->tok = tok;
    w->pipe[0] = w->pipe[1] = -1;
    if (pipe(w->pipe) != 0 || fcntl(w->pipe[0], F_SETFL, O_NONBLOCK) != 0 ||
        fcntl(w->pipe[1], F_SETFL, O_NONBLOCK) != 0) {
        snprintf(err, errlen, "tokenizer thread: pipe: %s", strerror(errno));
        goto fail;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (pthread_create(&w->thread, NULL, work, w) != 0) {
        snprintf(err, errlen, "cannot start the tokenizer thread");
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    *out = w;
    return 0;
fail:
    if (w->pipe[0] >= 0)
        close(w->pipe[0]);
    if (w->pipe[1] >= 0)
        close(w->pipe[1]);
    free(w);
    return -1;
}

int tokwork_stop(tokwork *w)
{
    if (!w)
        return 0;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    int encoding = w->encoding;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    if (encoding) {
        /* It reads w and the tokenizer until it ends: both stay, for the
         * process's exit to end them. */
        pthread_detach(w->thread);
        return -1;
    }
    pthread_join(w->thread, NULL);
    clear(w);
    close(w->pipe[0]);
    close(w->pipe[1]);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return 0;
}

int tokwork_fd(const tokwork *w)
{
    return w->pipe[0];
}

int tokwork_submit(tokwork *w, uint64_t tag, const char *text, size_t len, int flags)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, text, len);
    copy[len] = '\0';
    pthread_mutex_lock(&w->mu);
    int busy = w->busy;
    if (!busy) {
        w->busy = 1;
        w->tag = tag;
        w->text = copy;
        w->flags = flags;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->mu);
    if (busy)
        free(copy);
    return busy;
}

int tokwork_busy(tokwork *w)
{
    pthread_mutex_lock(&w->mu);
    int busy = w->busy;
    pthread_mutex_unlock(&w->mu);
    return busy;
}

int tokwork_take(tokwork *w, uint64_t tag, int **ids, int *n)
{
    char drain[64];
    while (read(w->pipe[0], drain, sizeof drain) > 0)
        ;
    pthread_mutex_lock(&w->mu);
    int ready = w->busy && w->done && !w->cancelled && w->tag == tag;
    if (ready) {
        *ids = w->ids;
        *n = w->n;
        w->ids = NULL;
        clear(w);
    }
    pthread_mutex_unlock(&w->mu);
    return ready;
}

void tokwork_cancel(tokwork *w, uint64_t tag)
{
    pthread_mutex_lock(&w->mu);
    if (w->busy && w->tag == tag) {
        if (w->encoding)
            w->cancelled = 1;
        else
            clear(w);
    }
    pthread_mutex_unlock(&w->mu);
}
