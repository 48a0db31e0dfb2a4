/* test_fork.c - fork while other threads allocate: the child must be able
 * to allocate and free (no lock left held by a thread that does not exist in
 * the child), and so must the parent afterwards. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static volatile int stop;

static void *churn(void *arg) {
    unsigned i = 0;
    while (!stop) {
        void *p = malloc(16 + (i++ * 37) % 100000);
        free(p);
    }
    return NULL;
}

int main(void) {
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
    stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    void *p = malloc(1000);
    CHECK(p != NULL);
    free(p);
    return CHECK_DONE();
}
