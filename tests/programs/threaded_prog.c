/* SPDX-License-Identifier: MIT */
/* threaded_prog.c - a threaded program with a deterministic result: worker
 * threads build linked lists and strings, hand them to a collector through a
 * queue, and the collector checks and frees them.  Prints a checksum. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 4
#define ITEMS 20000

typedef struct item {
    struct item *next;
    char *text;
    unsigned long value;
} item_t;

static item_t *queue;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done_workers;

static void *worker(void *arg) {
    unsigned long id = (unsigned long)arg;
    for (unsigned long i = 0; i < ITEMS; i++) {
        item_t *it = malloc(sizeof *it);
        size_t len = 1 + (i * 31 + id) % 700;
        it->text = malloc(len + 1);
        memset(it->text, 'a' + (int)(i % 26), len);
        it->text[len] = 0;
        it->value = id * 1000003u + i;
        pthread_mutex_lock(&lock);
        it->next = queue;
        queue = it;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    done_workers++;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void) {
    pthread_t t[WORKERS];
    for (unsigned long i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    unsigned long sum = 0, count = 0;
    pthread_mutex_lock(&lock);
    while (done_workers < WORKERS || queue) {
        while (!queue && done_workers < WORKERS)
            pthread_cond_wait(&cond, &lock);
        item_t *batch = queue;
        queue = NULL;
        pthread_mutex_unlock(&lock);
        while (batch) {
            item_t *next = batch->next;
            sum += batch->value + strlen(batch->text);
            count++;
            free(batch->text);
            free(batch);
            batch = next;
        }
        pthread_mutex_lock(&lock);
    }
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    printf("%lu items, checksum %lu\n", count, sum);
    return 0;
}
