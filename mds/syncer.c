/* syncer.c - the MDS group commit (syncer.h): a queue of packed replies and
 * one thread that runs a barrier (kv_sync) per batch and then answers the
 * batch. The answers are handed to each connection's own thread (rpc.h:
 * replies made by another thread are queued), so a client that reads no
 * replies never blocks this thread and with it every other client's
 * mutations. See the durability comment in namespace.c for what a crash
 * can lose (only what was never acknowledged). */
#include "syncer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "depfs.pb-c.h"
#include "log.h"

#define SYNC_EIO_MESSAGE "metadata store sync failed: the change may or may not be durable"

typedef struct sync_item {
    struct sync_item *next;
    rpc_replier *r;
    rpc_msg req;    /* type and req_id only */
    uint8_t *reply; /* packed MdsReply */
    size_t reply_len;
} sync_item;

struct mds_syncer {
    kvstore *kv;
    pthread_mutex_t m;
    pthread_cond_t cv;
    sync_item *head, **tail; /* FIFO: replies go out in the order they came */
    unsigned queued;
    bool stopping;
    pthread_t thr;
};

static void reply_eio(rpc_replier *r, const rpc_msg *req)
{
    Depfs__MdsReply rep = DEPFS__MDS_REPLY__INIT;
    rep.err = EIO;
    rep.message = (char *)SYNC_EIO_MESSAGE;
    rpc_reply_msg(r, req, &rep.base, NULL, 0);
}

static void send_batch(sync_item *batch, bool durable)
{
    while (batch) {
        sync_item *it = batch;
        batch = it->next;
        if (durable)
            rpc_reply(it->r, &it->req, it->reply, it->reply_len, NULL, 0);
        else
            reply_eio(it->r, &it->req);
        rpc_replier_release(it->r);
        free(it->reply);
        free(it);
    }
}

static void *syncer_main(void *arg)
{
    mds_syncer *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->m);
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->cv, &s->m);
        sync_item *batch = s->head;
        s->head = NULL;
        s->tail = &s->head;
        s->queued = 0;
        pthread_mutex_unlock(&s->m);
        if (!batch)
            break; /* stopping and drained */
        /* every item was queued after its write returned: this barrier,
         * started now, covers all of them */
        int rc = kv_sync(s->kv);
        if (rc < 0)
            log_err("metadata store sync failed: answering EIO to the waiting mutations");
        send_batch(batch, rc == 0);
    }
    return NULL;
}

int mds_syncer_start(kvstore *kv, mds_syncer **out)
{
    mds_syncer *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->kv = kv;
    s->tail = &s->head;
    pthread_mutex_init(&s->m, NULL);
    pthread_cond_init(&s->cv, NULL);
    int rc = pthread_create(&s->thr, NULL, syncer_main, s);
    if (rc != 0) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->m);
        free(s);
        return -rc;
    }
    *out = s;
    return 0;
}

void mds_syncer_stop(mds_syncer *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->m);
    s->stopping = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->m);
    pthread_join(s->thr, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->m);
    free(s);
}

static void reply_inline(kvstore *kv, rpc_replier *r, const rpc_msg *req,
                         const ProtobufCMessage *msg)
{
    if (kv_sync(kv) < 0)
        reply_eio(r, req);
    else
        rpc_reply_msg(r, req, msg, NULL, 0);
}

/* A queue item with msg packed into it, or NULL (out of memory). */
static sync_item *item_new(rpc_replier *r, const rpc_msg *req, const ProtobufCMessage *msg)
{
    sync_item *it = calloc(1, sizeof(*it));
    if (!it)
        return NULL;
    it->reply_len = protobuf_c_message_get_packed_size(msg);
    it->reply = malloc(it->reply_len ? it->reply_len : 1);
    if (!it->reply) {
        free(it);
        return NULL;
    }
    protobuf_c_message_pack(msg, it->reply);
    it->r = r;
    it->req.type = req->type;
    it->req.req_id = req->req_id;
    return it;
}

void mds_syncer_reply(mds_syncer *s, kvstore *kv, rpc_replier *r, const rpc_msg *req,
                      const ProtobufCMessage *msg)
{
    if (!s) {
        reply_inline(kv, r, req, msg);
        return;
    }
    sync_item *it = item_new(r, req, msg);
    if (!it) {
        reply_inline(kv, r, req, msg);
        return;
    }
    pthread_mutex_lock(&s->m);
    if (s->queued >= MDS_SYNC_QUEUE_MAX || s->stopping) {
        pthread_mutex_unlock(&s->m);
        free(it->reply);
        free(it);
        reply_inline(kv, r, req, msg); /* back pressure on this connection */
        return;
    }
    rpc_replier_hold(r);
    *s->tail = it;
    s->tail = &it->next;
    s->queued++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->m);
}
