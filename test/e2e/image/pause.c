/*
 * pause.c - the one program in podctl's test image (localhost/podctl-test/pause:1.0), built by
 * test/e2e/containerd-node.sh.
 *
 * It is both the sandbox ("pause") container and the workload container. It does
 * nothing but wait for signals, and it logs every signal it acts on with a
 * wall-clock timestamp, so a test can read from the container log whether and
 * when a SIGTERM arrived before the SIGKILL.
 *
 *   /pause               on SIGTERM/SIGINT: exit 0 at once
 *   /pause ignore        on SIGTERM/SIGINT: log and keep running (only SIGKILL ends it)
 *   /pause graceful N    on the first SIGTERM/SIGINT: keep running N seconds, then exit 0
 *
 * It runs as PID 1 of its PID namespace, so it installs handlers (the kernel drops
 * default-action signals sent to a namespace's init) and reaps any children.
 * Signals are blocked outside sigsuspend(), so none is lost between checks.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t term_count = 0;
static volatile sig_atomic_t last_signal = 0;

static void on_term(int sig) { term_count++; last_signal = sig; }
static void on_chld(int sig) { (void)sig; }

static void say(const char *fmt, ...) {
    struct timespec now;
    char line[256];
    int n;
    va_list ap;
    clock_gettime(CLOCK_REALTIME, &now);
    n = snprintf(line, sizeof line, "%lld.%03ld pause[%d]: ", (long long)now.tv_sec,
                 now.tv_nsec / 1000000L, (int)getpid());
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0) { /* nothing useful to do */ }
}

static void usage(void) {
    say("usage: /pause [ignore | graceful SECONDS]");
    exit(2);
}

int main(int argc, char **argv) {
    enum { MODE_DEFAULT, MODE_IGNORE, MODE_GRACEFUL } mode = MODE_DEFAULT;
    long grace = 0;
    sigset_t waited, orig;
    struct sigaction sa;
    int handled = 0;

    if (argc >= 2 && strcmp(argv[1], "ignore") == 0 && argc == 2) {
        mode = MODE_IGNORE;
    } else if (argc >= 2 && strcmp(argv[1], "graceful") == 0) {
        char *end = NULL;
        if (argc != 3) usage();
        errno = 0;
        grace = strtol(argv[2], &end, 10);
        if (errno || end == argv[2] || *end != '\0' || grace < 0) usage();
        mode = MODE_GRACEFUL;
    } else if (argc >= 2 && !(strcmp(argv[1], "default") == 0 && argc == 2)) {
        usage();
    }

    sigemptyset(&waited);
    sigaddset(&waited, SIGTERM);
    sigaddset(&waited, SIGINT);
    sigaddset(&waited, SIGCHLD);
    sigprocmask(SIG_BLOCK, &waited, &orig);

    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_chld;
    sigaction(SIGCHLD, &sa, NULL);

    say("started mode=%s grace=%lds",
        mode == MODE_IGNORE ? "ignore" : mode == MODE_GRACEFUL ? "graceful" : "default", grace);

    for (;;) {
        sigsuspend(&orig);
        while (waitpid(-1, NULL, WNOHANG) > 0) {}
        if (term_count == handled) continue;
        handled = term_count;
        if (mode == MODE_IGNORE) {
            say("received %s, ignoring it", last_signal == SIGINT ? "SIGINT" : "SIGTERM");
            continue;
        }
        say("received %s", last_signal == SIGINT ? "SIGINT" : "SIGTERM");
        if (mode == MODE_GRACEFUL && grace > 0) {
            struct timespec left = { grace, 0 };
            say("shutting down in %lds", grace);
            while (nanosleep(&left, &left) != 0 && errno == EINTR) {}
        }
        say("exiting 0");
        return 0;
    }
}
