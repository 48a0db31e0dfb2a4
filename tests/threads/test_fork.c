/* SPDX-License-Identifier: MIT */
/* test_fork.c - fork while other threads allocate: the child must be able
 * to allocate and free (no lock left held by a thread that does not exist in
 * the child), and so must the parent afterwards.
 *
 * `test_fork background` (with ALLOY_CONF=background_thread:true): the fork
 * child has no background thread; alloy_ctl must say so, and the child must
 * be able to start one again. */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy/ctl.h"
#include "check.h"

static volatile int stop;

static void *churn(void *arg) {
    unsigned i = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        void *p = malloc(16 + (i++ * 37) % 100000);
        free(p);
    }
    return NULL;
}

static bool background_running(void) {
    bool on = false;
    size_t len = sizeof on;
    return alloy_ctl("background_thread", &on, &len, NULL, 0) == 0 && on;
}

static int threads_of_process(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static int background_case(void) {
    CHECK(background_running());
    CHECK_EQ_U(threads_of_process(), 2); /* main + background */
    pid_t pid = fork();
    if (pid == 0) {
        /* exit status: 0 ok; 10 + the failed step otherwise */
        if (background_running())
            _exit(11); /* threads do not survive fork */
        if (threads_of_process() != 1)
            _exit(12);
        bool on = true;
        if (alloy_ctl("background_thread", NULL, NULL, &on, sizeof on) != 0)
            _exit(13);
        if (!background_running() || threads_of_process() != 2)
            _exit(14); /* it must really run again */
        on = false;
        if (alloy_ctl("background_thread", NULL, NULL, &on, sizeof on) != 0 || background_running())
            _exit(15);
        /* the joined thread's entry leaves /proc/self/task a moment after
         * the join returns (the kernel wakes the joiner as the thread exits,
         * before it is released): wait up to a second for it */
        for (int i = 0; i < 1000 && threads_of_process() != 1; i++)
            usleep(1000);
        if (threads_of_process() != 1)
            _exit(16);
        _exit(0);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "fork child: status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(background_running()); /* the parent's thread is untouched */
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "background"))
        return background_case();
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    for (int round = 0; round < 50; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            int ok = 1;
            for (int i = 0; i < 2000; i++) {
                char *p = malloc(10 + (size_t)i * 53 % 300000);
                if (!p) {
                    ok = 0;
                    break;
                }
                memset(p, 1, 10);
                free(p);
            }
            _exit(ok ? 0 : 3);
        }
        int status = -1;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    void *p = malloc(1000);
    CHECK(p != NULL);
    free(p);
    return CHECK_DONE();
}
