/* localexec.c: a node's script run by /bin/sh on this machine
 * (localexec.h). */
#include "localexec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/sys/clock.h"

/* How often io's cancelled is asked while the script is quiet. */
#define POLL_MS 100

/* The child: stdin from /dev/null, stdout and stderr to the pipes, in its
 * own process group so that the parent can end everything it started
 * (a `tail -F` for one). Only async-signal-safe calls after fork. */
static void child(const char *script, int out_fd, int err_fd)
{
    setpgid(0, 0);
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        _exit(127);
    execl("/bin/sh", "sh", "-c", script, (char *)NULL);
    _exit(127);
}

/* Reads what one pipe has: 0 while it stays open, 1 at its end, -1 when
 * io's output asked to stop. */
static int drain(int fd, int which, const sshconn_io *io)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : 1;
    if (n == 0)
        return 1;
    if (io && io->output && io->output(io->ctx, which, buf, (size_t)n) != 0)
        return -1;
    return 0;
}

/* A stop or a missed deadline ends the script's whole group. */
static void stop_group(pid_t pid)
{
    kill(-pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

int localexec_run(const char *script, int deadline_ms, const sshconn_io *io, int *exit_status,
                  char *err, size_t errlen)
{
    int out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (out[i] >= 0)
                close(out[i]);
            if (errp[i] >= 0)
                close(errp[i]);
        }
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0)
        child(script, out[1], errp[1]);
    close(out[1]);
    close(errp[1]);
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(out[0]);
        close(errp[0]);
        return -1;
    }
    setpgid(pid, pid); /* also here: the group exists before any kill below */
    double until = deadline_ms > 0 ? clock_ms() + deadline_ms : 0;
    int open_fds = 2, rc = 0;
    struct pollfd pfd[2] = {{.fd = out[0], .events = POLLIN}, {.fd = errp[0], .events = POLLIN}};
    while (open_fds > 0) {
        if (io && io->cancelled && io->cancelled(io->ctx)) {
            rc = SSHCONN_STOPPED;
            break;
        }
        if (until && clock_ms() > until) {
            snprintf(err, errlen, "the script ran past its %d ms deadline on this machine",
                     deadline_ms);
            rc = -1;
            break;
        }
        if (poll(pfd, 2, POLL_MS) < 0 && errno != EINTR) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            rc = -1;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int d = drain(pfd[i].fd, i + 1, io);
            if (d < 0) {
                rc = SSHCONN_STOPPED;
                break;
            }
            if (d > 0) {
                pfd[i].fd = -1;
                open_fds--;
            }
        }
        if (rc)
            break;
    }
    close(out[0]);
    close(errp[0]);
    if (rc != 0) {
        stop_group(pid);
        *exit_status = -1;
        return rc;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    *exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 0;
}
