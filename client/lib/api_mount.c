/* api_mount.c - libdepfs entry points: depfs_mount (config, register with
 * the MDS, the cluster's server table and default layout) and
 * depfs_unmount (every open file written back, background removals
 * drained, then everything freed). */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "engines.h"
#include "label.h"
#include "log.h"


static int mount_register(depfs_t *fs)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_REGISTER, &req, &rep);
    if (rc == 0 && (!rep->has_client_id || rep->client_id == 0)) {
        dc_set_error("MDS_REGISTER: the MDS returned no client id");
        rc = -EPROTO;
    }
    if (rc == 0)
        rc = dc_ticket_take(fs, rep);
    if (rc == 0)
        fs->client_id = rep->client_id;
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    return rc;
}

static int servers_init(depfs_t *fs, const Depfs__MdsReply *rep)
{
    size_t count = rep->n_servers;
    if (count > CONFIG_MAX_IOSERVERS) {
        dc_set_error("MDS_CLUSTER: %zu servers, more than the limit %u", count, CONFIG_MAX_IOSERVERS);
        return -EPROTO;
    }
    fs->servers = calloc(count ? count : 1, sizeof *fs->servers);
    if (!fs->servers)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        const Depfs__ServerInfo *si = rep->servers[i];
        dc_server *s = &fs->servers[i];
        s->id = si->id;
        const ioserver_conf *ic = config_ioserver(&fs->cfg, si->id);
        const char *addr = (si->address && si->address[0]) ? si->address : (ic ? ic->address : "");
        snprintf(s->address, sizeof s->address, "%s", addr);
        s->state = (int)si->state;
        pthread_mutex_init(&s->lock, NULL);
        atomic_init(&s->down_until_ms, 0);
        atomic_init(&s->failed_ms, 0);
        atomic_init(&s->fail_epoch, DC_FAIL_EPOCH_UNKNOWN);
        fs->nservers = (unsigned)i + 1;
    }
    return 0;
}

/* The mount's default layout: the cluster's, overridden by the options. */
static int defaults_init(depfs_t *fs, const Depfs__MdsReply *rep, const depfs_options *opt)
{
    if (rep->default_layout) {
        fs->default_n = rep->default_layout->n;
        fs->default_k = rep->default_layout->k;
        fs->default_su = rep->default_layout->stripe_unit;
    } else {
        fs->default_n = fs->cfg.default_n;
        fs->default_k = fs->cfg.default_k;
        fs->default_su = fs->cfg.default_su;
    }
    if (!opt || (!opt->default_n && !opt->default_k && !opt->default_su))
        return 0;
    unsigned n = opt->default_n ? opt->default_n : fs->default_n;
    unsigned k = opt->default_k ? opt->default_k : fs->default_k;
    uint32_t su = opt->default_su ? opt->default_su : fs->default_su;
    char why[256];
    if (k == 0 || k > n || n > LAYOUT_MAX_N) {
        dc_set_error("bad default layout: n=%u k=%u (need 1 <= k <= n <= %u)", n, k, LAYOUT_MAX_N);
        return -EINVAL;
    }
    if (label_check_cluster(n, fs->nservers, why, sizeof why) < 0) {
        dc_set_error("bad default layout: %s", why);
        return -EINVAL;
    }
    if (su < LAYOUT_MIN_SU || su > LAYOUT_MAX_SU || su % LAYOUT_MIN_SU) {
        dc_set_error("bad default stripe unit %u (a multiple of %u up to %u)", su, LAYOUT_MIN_SU,
                     LAYOUT_MAX_SU);
        return -EINVAL;
    }
    fs->default_n = n;
    fs->default_k = k;
    fs->default_su = su;
    fs->default_from_mount = true;
    return 0;
}

static int mount_cluster(depfs_t *fs, const depfs_options *opt)
{
    Depfs__MdsRequest req = DEPFS__MDS_REQUEST__INIT;
    Depfs__MdsReply *rep = NULL;
    int rc = dc_mds_call(fs, DEPFS__MDS_OP__MDS_CLUSTER, &req, &rep);
    if (rc == 0)
        rc = servers_init(fs, rep);
    if (rc == 0)
        rc = defaults_init(fs, rep, opt);
    if (rc == 0 && rep->has_cluster_epoch)
        atomic_store(&fs->cluster_epoch, rep->cluster_epoch);
    if (rep)
        depfs__mds_reply__free_unpacked(rep, NULL);
    atomic_store(&fs->cluster_refresh_ms, dc_now_ms());
    return rc;
}

static depfs_t *fs_alloc(void)
{
    depfs_t *fs = calloc(1, sizeof *fs);
    if (!fs)
        return NULL;
    if (dc_caps_init(fs) < 0) {
        free(fs);
        return NULL;
    }
    pthread_mutex_init(&fs->mds_lock, NULL);
    pthread_mutex_init(&fs->io_creds_lock, NULL);
    pthread_mutex_init(&fs->caps_lock, NULL);
    pthread_mutex_init(&fs->inodes_lock, NULL);
    pthread_mutex_init(&fs->codecs_lock, NULL);
    pthread_mutex_init(&fs->retired_lock, NULL);
    pthread_mutex_init(&fs->keeper_lock, NULL);
    pthread_mutex_init(&fs->releases_lock, NULL);
    pthread_mutex_init(&fs->pace_lock, NULL);
    pthread_mutex_init(&fs->dirattr_lock, NULL);
    pthread_cond_init(&fs->keeper_wake, NULL);
    clock_cond_init(&fs->releases_wake); /* its batches wait clock_deadline_after_ms */
    pthread_cond_init(&fs->releases_sent, NULL);
    atomic_init(&fs->next_op_id, 0);
    atomic_init(&fs->cluster_refresh_ms, 0);
    atomic_init(&fs->cluster_epoch, 0);
    atomic_init(&fs->mark_recheck_ms, 0);
    atomic_init(&fs->dirattr_gen, 0);
    atomic_init(&fs->releases_batches, 0);
    atomic_init(&fs->alloc_rounds, 0);
    dc_sa_init(&fs->statahead, 0); /* on at mount, when asked for */
    dc_names_pass_init(&fs->names_pass);
    return fs;
}

/* The inode table (core_handles.h): its tags only a user proved by MUNGE
 * needs; the kernel's lookups (and their name generations) a mount that
 * counts them. */
static int handles_init(depfs_t *fs, const depfs_options *opt)
{
    fs->count_lookups = opt ? opt->count_lookups : false;
    fs->names_moved = opt && opt->count_lookups ? opt->names_moved : NULL;
    fs->names_moved_arg = opt ? opt->names_moved_arg : NULL;
    bool tags = fs->mds_creds.method == AUTH_METHOD_MUNGE;
    if (!tags && !fs->count_lookups)
        return 0;
    if (dc_handles_init(&fs->handles, DC_HANDLES_MAX) < 0) {
        dc_set_error("out of memory for the inode handle table");
        return -ENOMEM;
    }
    fs->handles_on = tags;
    return 0;
}

static void fs_free(depfs_t *fs)
{
    if (fs->mds)
        rpc_conn_close(fs->mds);
    for (unsigned i = 0; i < fs->nservers; i++) {
        if (fs->servers[i].conn)
            rpc_conn_close(fs->servers[i].conn);
        pthread_mutex_destroy(&fs->servers[i].lock);
    }
    free(fs->servers);
    dc_retired_reap(fs, true);
    for (unsigned n = 0; n <= CODEC_MAX_UNITS; n++)
        for (unsigned k = 0; k <= CODEC_MAX_UNITS; k++)
            if (fs->codecs[n][k])
                codec_free(fs->codecs[n][k]);
    pthread_mutex_destroy(&fs->mds_lock);
    pthread_mutex_destroy(&fs->io_creds_lock);
    auth_wipe(&fs->mds_creds, sizeof(fs->mds_creds));
    auth_wipe(&fs->io_creds, sizeof(fs->io_creds));
    dc_caps_destroy(fs);
    pthread_mutex_destroy(&fs->caps_lock);
    pthread_mutex_destroy(&fs->inodes_lock);
    pthread_mutex_destroy(&fs->codecs_lock);
    pthread_mutex_destroy(&fs->retired_lock);
    pthread_mutex_destroy(&fs->keeper_lock);
    pthread_mutex_destroy(&fs->releases_lock);
    pthread_mutex_destroy(&fs->pace_lock);
    pthread_mutex_destroy(&fs->dirattr_lock);
    dc_sa_destroy(&fs->statahead);
    pthread_cond_destroy(&fs->keeper_wake);
    pthread_cond_destroy(&fs->releases_wake);
    pthread_cond_destroy(&fs->releases_sent);
    dc_handles_destroy(&fs->handles);
    dc_names_pass_destroy(&fs->names_pass);
    free(fs);
}

int depfs_mount(const depfs_options *opt, depfs_t **out)
{
    char err[512];
    *out = NULL;
    depfs_t *fs = fs_alloc();
    if (!fs) {
        dc_set_error("out of memory");
        return -ENOMEM;
    }
    int rc = config_load(opt ? opt->config_path : NULL, &fs->cfg, err, sizeof err);
    if (rc < 0) {
        dc_set_error("config: %s", err);
        goto fail;
    }
    dc_pace_init(&fs->pace, fs->cfg.rebuild_rate, fs->cfg.rebuild_busy_rate);
    fs->limits.max_header_bytes = fs->cfg.max_header_bytes;
    fs->limits.max_bulk_bytes = fs->cfg.max_bulk_bytes;
    rc = rpc_auth_creds_for_mds(fs->cfg.auth, fs->cfg.cluster_key, fs->cfg.munge_socket,
                                &fs->mds_creds, err, sizeof err);
    if (rc < 0) {
        dc_set_error("auth: %s", err);
        goto fail;
    }
    if (fs->mds_creds.method == AUTH_METHOD_KEY)
        fs->io_creds = fs->mds_creds;
    rc = handles_init(fs, opt);
    if (rc < 0)
        goto fail;
    fs->ignore_locks = opt ? opt->ignore_locks : false;
    fs->statahead.max_age_ms = opt ? opt->statahead_ms : 0; /* before any call */
    fs->inode_released = dc_data_release;
    rc = mount_register(fs);
    if (rc < 0)
        goto fail;
    rc = mount_cluster(fs, opt);
    if (rc < 0)
        goto fail;
    rc = dc_keeper_start(fs);
    if (rc == 0)
        rc = dc_releases_start(fs);
    if (rc < 0) {
        dc_keeper_stop(fs);
        goto fail;
    }
    log_info("libdepfs: mounted %s as client %llu (%u I/O servers, default %u@%u@%u)",
             fs->cfg.mds_address, (unsigned long long)fs->client_id, fs->nservers, fs->default_n,
             fs->default_k, fs->default_su);
    *out = fs;
    return 0;
fail:
    fs_free(fs);
    return rc;
}

/* Writes back a file still open at unmount: its buffered bytes and its
 * size, acting for the opener of the handle that wrote them (as that
 * handle's flush would: depfs_flush), not for whoever unmounts (a
 * depfs-fuse or a service acting for many users is root, squashed). */
static void unmount_write_back(depfs_t *fs, dc_inode *in)
{
    dc_acting saved;
    depfs_cred writer;
    pthread_mutex_lock(&in->lock);
    bool has_writer = in->has_writer;
    if (has_writer)
        writer = in->writer;
    pthread_mutex_unlock(&in->lock);
    if (has_writer)
        dc_act_push(&writer, &saved);
    int rc = dc_data_flush(fs, in, NULL, false);
    if (rc == 0)
        rc = dc_inode_commit_size(fs, in, NULL);
    if (has_writer)
        dc_act_pop(&saved);
    if (rc < 0)
        log_err("libdepfs: unmount: flushing file %llu: %s (%s)", (unsigned long long)in->ino,
                strerror(-rc), depfs_last_error());
}

void depfs_unmount(depfs_t *fs)
{
    if (!fs)
        return;
    dc_keeper_stop(fs); /* before the inode table it walks goes */
    /* write back every open file, then free the table */
    for (dc_inode *in = dc_inodes_detach_all(fs), *next; in != NULL; in = next) {
        next = in->next;
        unmount_write_back(fs, in);
        dc_inode_free(fs, in);
    }
    dc_releases_stop(fs); /* sends the holds still queued */
    fs_free(fs);
}
