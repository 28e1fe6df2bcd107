/*
 * floorfs.c: the floor under any FUSE filesystem's metadata figures on this machine.
 *
 * The C twin of floorfs.py: an in-memory filesystem on libfuse 3's low-level API, one
 * thread, doing the least a filesystem can, with every entry, attribute and page cached
 * by the kernel for an hour. Its loop polls /dev/fuse for up to 100 us before it blocks,
 * as HelixFS's does (ADR 0026). What `tar x`, `git status` and `rm -rf` cost here is
 * the kernel's FUSE round trips, which no daemon, in any language, can undercut.
 * bench_floor.py builds and runs it; it serves what those workloads use, nothing more.
 *
 *   gcc -O2 -Wall floorfs.c $(pkg-config fuse3 --cflags --libs) -o floorfs
 *   ./floorfs MOUNTPOINT [--block] [--locked] [--uring]   # foreground; fusermount3 -u to stop
 *
 * --block sleeps in read() without polling first: better when daemon and client share
 * one CPU, where polling only takes the CPU from the client.
 * --locked serves every operation under one mutex (floorfs_locked.h), as --uring must.
 * --uring asks libfuse >= 3.18 for FUSE over io_uring (-o io_uring; the kernel's
 * fuse.enable_uring must be 1): one thread per CPU queue, pinned to it, while the main
 * thread blocks on /dev/fuse for what still comes that way (INIT, FORGET).
 *
 * SIGUSR1 prints (and resets) the requests counted per opcode on stderr; the rest are
 * printed at unmount.
 */
#define FUSE_USE_VERSION 34
#define _GNU_SOURCE
#include <fuse_lowlevel.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>

#define TIMEOUT 3600.0

/* ---------------------------------------------------------------- counters */
#define OPS(X) X(init) X(destroy) X(lookup) X(forget) X(forget_multi) \
    X(forget_multi_items) X(getattr) X(setattr) X(readlink) X(mknod) X(mkdir) \
    X(unlink) X(rmdir) X(symlink) X(rename) X(link) X(open) X(read) X(write) \
    X(flush) X(release) X(fsync) X(opendir) X(readdir) X(releasedir) \
    X(fsyncdir) X(statfs) X(setxattr) X(getxattr) X(listxattr) \
    X(removexattr) X(access) X(create)
#define ENUM_OP(n) OP_##n,
#define NAME_OP(n) #n,
enum { OPS(ENUM_OP) OP_MAX };
static const char *op_names[] = { OPS(NAME_OP) };
static volatile unsigned long counters[OP_MAX];
static volatile unsigned long off_main; /* requests served by another thread (the ring's) */
#define COUNT(n) (counters[OP_##n]++)

static void dump_counters(const char *tag)
{
    char buf[4096];
    int len = snprintf(buf, sizeof buf, "=== floorfs counters [%s]:", tag);
    unsigned long total = 0;
    for (int i = 0; i < OP_MAX; i++) {
        if (i != OP_forget_multi_items)
            total += counters[i];
        if (counters[i] && len < (int)sizeof buf - 64)
            len += snprintf(buf + len, sizeof buf - len, " %s=%lu",
                            op_names[i], counters[i]);
        counters[i] = 0;
    }
    len += snprintf(buf + len, sizeof buf - len, " TOTAL=%lu off_main=%lu\n", total,
                    off_main);
    off_main = 0;
    if (write(2, buf, len) < 0) { /* nothing to do */ }
}

static void on_usr1(int sig) { (void)sig; dump_counters("SIGUSR1"); }

/* ------------------------------------------------------------ data model */
struct dent {
    char *name;          /* NULL = tombstone (keeps readdir offsets stable) */
    uint32_t hash;
    int next;            /* next slot in hash chain, -1 = end */
    fuse_ino_t ino;
};

struct dir {
    struct dent *ents;
    int n, cap;          /* used slots (incl. tombstones), capacity */
    int live;
    int *buckets;
    int nbuckets;
    int opens;           /* open handles: no compaction while > 0 */
};

struct node {
    fuse_ino_t ino;
    mode_t mode;
    nlink_t nlink;
    uid_t uid;
    gid_t gid;
    dev_t rdev;
    uint64_t nlookup;
    struct timespec atime, mtime, ctime;
    size_t size;
    size_t cap;
    char *data;          /* file contents or symlink target (NUL-terminated) */
    struct dir *dir;     /* directories only */
    fuse_ino_t parent;
};

static struct node **nodes;
static size_t nodes_cap;
static fuse_ino_t next_ino = 1;
static unsigned long nodes_live;

static struct node *get(fuse_ino_t ino)
{
    return ino < next_ino ? nodes[ino] : NULL;
}

static struct timespec now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t;
}

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static struct node *new_node(mode_t mode, const struct fuse_ctx *ctx)
{
    if (next_ino >= nodes_cap) {
        size_t old = nodes_cap;
        nodes_cap = nodes_cap ? nodes_cap * 2 : 1024;
        nodes = realloc(nodes, nodes_cap * sizeof *nodes);
        if (!nodes)
            abort();
        memset(nodes + old, 0, (nodes_cap - old) * sizeof *nodes);
    }
    struct node *n = calloc(1, sizeof *n);
    if (!n)
        abort();
    n->ino = next_ino++;
    nodes[n->ino] = n;
    n->mode = mode;
    n->nlink = 1;
    n->uid = ctx ? ctx->uid : getuid();
    n->gid = ctx ? ctx->gid : getgid();
    n->atime = n->mtime = n->ctime = now();
    if (S_ISDIR(mode)) {
        n->nlink = 2;
        n->dir = calloc(1, sizeof *n->dir);
        n->dir->nbuckets = 16;
        n->dir->buckets = malloc(16 * sizeof(int));
        memset(n->dir->buckets, 0xff, 16 * sizeof(int));
    }
    nodes_live++;
    return n;
}

static void free_node(struct node *n)
{
    if (n->dir) {
        for (int i = 0; i < n->dir->n; i++)
            free(n->dir->ents[i].name);
        free(n->dir->ents);
        free(n->dir->buckets);
        free(n->dir);
    }
    free(n->data);
    nodes[n->ino] = NULL;
    free(n);
    nodes_live--;
}

static void maybe_free(struct node *n)
{
    if (n && n->ino != FUSE_ROOT_ID && n->nlink == 0 && n->nlookup == 0)
        free_node(n);
}

/* rebuild hash chains; if compact, also drop tombstones (changes offsets) */
static void dir_rehash(struct dir *d, int nbuckets, int compact)
{
    if (compact) {
        int j = 0;
        for (int i = 0; i < d->n; i++)
            if (d->ents[i].name)
                d->ents[j++] = d->ents[i];
        d->n = j;
    }
    if (nbuckets != d->nbuckets) {
        d->buckets = realloc(d->buckets, nbuckets * sizeof(int));
        d->nbuckets = nbuckets;
    }
    memset(d->buckets, 0xff, nbuckets * sizeof(int));
    for (int i = 0; i < d->n; i++) {
        if (!d->ents[i].name)
            continue;
        int b = d->ents[i].hash & (nbuckets - 1);
        d->ents[i].next = d->buckets[b];
        d->buckets[b] = i;
    }
}

static int dir_slot(struct dir *d, const char *name)
{
    uint32_t h = hash_name(name);
    for (int i = d->buckets[h & (d->nbuckets - 1)]; i >= 0; i = d->ents[i].next)
        if (d->ents[i].hash == h && strcmp(d->ents[i].name, name) == 0)
            return i;
    return -1;
}

static struct node *dir_find(struct node *p, const char *name)
{
    int i = dir_slot(p->dir, name);
    return i < 0 ? NULL : get(p->dir->ents[i].ino);
}

static void dir_add(struct node *p, const char *name, fuse_ino_t ino)
{
    struct dir *d = p->dir;
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->ents = realloc(d->ents, d->cap * sizeof *d->ents);
        if (!d->ents)
            abort();
    }
    struct dent *e = &d->ents[d->n];
    e->name = strdup(name);
    e->hash = hash_name(name);
    e->ino = ino;
    int b = e->hash & (d->nbuckets - 1);
    e->next = d->buckets[b];
    d->buckets[b] = d->n;
    d->n++;
    d->live++;
    if (d->live > d->nbuckets)
        dir_rehash(d, d->nbuckets * 2, 0);
    p->mtime = p->ctime = now();
}

static void dir_remove(struct node *p, const char *name)
{
    struct dir *d = p->dir;
    uint32_t h = hash_name(name);
    int *link = &d->buckets[h & (d->nbuckets - 1)];
    while (*link >= 0) {
        struct dent *e = &d->ents[*link];
        if (e->hash == h && strcmp(e->name, name) == 0) {
            *link = e->next;
            free(e->name);
            e->name = NULL;
            d->live--;
            break;
        }
        link = &e->next;
    }
    if (d->opens == 0 && d->n > 32 && d->n > 2 * d->live)
        dir_rehash(d, d->nbuckets, 1);
    p->mtime = p->ctime = now();
}

/* ------------------------------------------------------------- helpers */
static void fill_attr(struct node *n, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = n->ino;
    st->st_mode = n->mode;
    st->st_nlink = n->nlink;
    st->st_uid = n->uid;
    st->st_gid = n->gid;
    st->st_rdev = n->rdev;
    st->st_size = S_ISDIR(n->mode) ? 4096 : (off_t)n->size;
    st->st_blksize = 4096;
    st->st_blocks = (n->size + 511) / 512;
    st->st_atim = n->atime;
    st->st_mtim = n->mtime;
    st->st_ctim = n->ctime;
}

/* The entry the kernel will cache for `n`; it holds one more lookup of it. */
static struct fuse_entry_param entry_of(struct node *n)
{
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    e.ino = n->ino;
    e.attr_timeout = TIMEOUT;
    e.entry_timeout = TIMEOUT;
    fill_attr(n, &e.attr);
    n->nlookup++;
    return e;
}

static void reply_entry(fuse_req_t req, struct node *n)
{
    struct fuse_entry_param e = entry_of(n);
    fuse_reply_entry(req, &e);
}

static int set_size(struct node *n, size_t size)
{
    if (size > n->cap) {
        size_t c = n->cap ? n->cap : 64;
        while (c < size)
            c *= 2;
        char *p = realloc(n->data, c);
        if (!p)
            return ENOSPC;
        n->data = p;
        n->cap = c;
    }
    if (size > n->size)
        memset(n->data + n->size, 0, size - n->size);
    n->size = size;
    return 0;
}

/* The parent of a new `name`, checked (also for link) */
static int prepare_new(fuse_req_t req, fuse_ino_t parent, const char *name,
                       struct node **pp)
{
    (void)req;
    struct node *p = get(parent);
    if (!p)
        return ENOENT;
    if (!p->dir)
        return ENOTDIR;
    if (strlen(name) > 255)
        return ENAMETOOLONG;
    if (dir_find(p, name))
        return EEXIST;
    *pp = p;
    return 0;
}

/* A new node `name` in `parent` (mknod/mkdir/create/symlink); NULL once an error
 * has been replied. */
static struct node *make_child(fuse_req_t req, fuse_ino_t parent, const char *name,
                               mode_t mode)
{
    struct node *p;
    int err = prepare_new(req, parent, name, &p);
    if (err) {
        fuse_reply_err(req, err);
        return NULL;
    }
    struct node *n = new_node(mode, fuse_req_ctx(req));
    n->parent = parent;
    dir_add(p, name, n->ino);
    if (S_ISDIR(mode))
        p->nlink++;
    return n;
}

/* ---------------------------------------------------------------- ops */
static void op_init(void *ud, struct fuse_conn_info *conn)
{
    (void)ud; (void)conn;
    COUNT(init);
}

static void op_destroy(void *ud) { (void)ud; COUNT(destroy); }

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    COUNT(lookup);
    struct node *p = get(parent), *n;
    if (!p || !p->dir) {
        fuse_reply_err(req, p ? ENOTDIR : ENOENT);
        return;
    }
    if (strcmp(name, ".") == 0)
        n = p;
    else if (strcmp(name, "..") == 0)
        n = get(p->parent ? p->parent : FUSE_ROOT_ID);
    else
        n = dir_find(p, name);
    if (!n) {
        struct fuse_entry_param e;
        memset(&e, 0, sizeof e);
        e.ino = 0;
        e.entry_timeout = TIMEOUT;
        fuse_reply_entry(req, &e);
        return;
    }
    reply_entry(req, n);
}

static void do_forget(fuse_ino_t ino, uint64_t nlookup)
{
    struct node *n = get(ino);
    if (!n)
        return;
    n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
    maybe_free(n);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    COUNT(forget);
    do_forget(ino, nlookup);
    fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
                            struct fuse_forget_data *forgets)
{
    COUNT(forget_multi);
    counters[OP_forget_multi_items] += count;
    for (size_t i = 0; i < count; i++)
        do_forget(forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    COUNT(getattr);
    struct node *n = get(ino);
    if (!n) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct stat st;
    fill_attr(n, &st);
    fuse_reply_attr(req, &st, TIMEOUT);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                       int to_set, struct fuse_file_info *fi)
{
    (void)fi;
    COUNT(setattr);
    struct node *n = get(ino);
    if (!n) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct timespec t = now();
    if (to_set & FUSE_SET_ATTR_SIZE) {
        if (S_ISDIR(n->mode)) {
            fuse_reply_err(req, EISDIR);
            return;
        }
        int err = set_size(n, attr->st_size);
        if (err) {
            fuse_reply_err(req, err);
            return;
        }
        n->mtime = t;
    }
    if (to_set & FUSE_SET_ATTR_MODE)
        n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
    if (to_set & FUSE_SET_ATTR_UID)
        n->uid = attr->st_uid;
    if (to_set & FUSE_SET_ATTR_GID)
        n->gid = attr->st_gid;
    if (to_set & FUSE_SET_ATTR_ATIME_NOW)
        n->atime = t;
    else if (to_set & FUSE_SET_ATTR_ATIME)
        n->atime = attr->st_atim;
    if (to_set & FUSE_SET_ATTR_MTIME_NOW)
        n->mtime = t;
    else if (to_set & FUSE_SET_ATTR_MTIME)
        n->mtime = attr->st_mtim;
    if (to_set & FUSE_SET_ATTR_CTIME)
        n->ctime = attr->st_ctim;
    else
        n->ctime = t;
    struct stat st;
    fill_attr(n, &st);
    fuse_reply_attr(req, &st, TIMEOUT);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
    COUNT(readlink);
    struct node *n = get(ino);
    if (!n || !S_ISLNK(n->mode)) {
        fuse_reply_err(req, n ? EINVAL : ENOENT);
        return;
    }
    fuse_reply_readlink(req, n->data);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode, dev_t rdev)
{
    COUNT(mknod);
    struct node *n = make_child(req, parent, name, mode);
    if (!n)
        return;
    n->rdev = rdev;
    reply_entry(req, n);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode)
{
    COUNT(mkdir);
    struct node *n = make_child(req, parent, name, S_IFDIR | (mode & 07777));
    if (n)
        reply_entry(req, n);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                      mode_t mode, struct fuse_file_info *fi)
{
    COUNT(create);
    struct node *n = make_child(req, parent, name, S_IFREG | (mode & 07777));
    if (!n)
        return;
    fi->keep_cache = 1;
    fi->fh = 0;
    struct fuse_entry_param e = entry_of(n);
    fuse_reply_create(req, &e, fi);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
                       const char *name)
{
    COUNT(symlink);
    struct node *n = make_child(req, parent, name, S_IFLNK | 0777);
    if (!n)
        return;
    n->data = strdup(target);
    n->size = strlen(target);
    n->cap = n->size + 1;
    reply_entry(req, n);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                    const char *newname)
{
    COUNT(link);
    struct node *p, *n = get(ino);
    int err = prepare_new(req, newparent, newname, &p);
    if (!err && !n)
        err = ENOENT;
    if (!err && S_ISDIR(n->mode))
        err = EPERM;
    if (err) {
        fuse_reply_err(req, err);
        return;
    }
    n->nlink++;
    n->ctime = now();
    dir_add(p, newname, n->ino);
    reply_entry(req, n);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    COUNT(unlink);
    struct node *p = get(parent), *n;
    if (!p || !p->dir || !(n = dir_find(p, name))) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (S_ISDIR(n->mode)) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    dir_remove(p, name);
    n->nlink--;
    n->ctime = now();
    maybe_free(n);
    fuse_reply_err(req, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    COUNT(rmdir);
    struct node *p = get(parent), *n;
    if (!p || !p->dir || !(n = dir_find(p, name))) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (!S_ISDIR(n->mode)) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    if (n->dir->live) {
        fuse_reply_err(req, ENOTEMPTY);
        return;
    }
    dir_remove(p, name);
    p->nlink--;
    n->nlink = 0;
    maybe_free(n);
    fuse_reply_err(req, 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname,
                      unsigned int flags)
{
    COUNT(rename);
    struct node *p = get(parent), *np = get(newparent), *src, *dst;
    if (flags & ~RENAME_NOREPLACE) {
        fuse_reply_err(req, EINVAL);   /* RENAME_EXCHANGE/WHITEOUT unsupported */
        return;
    }
    if (!p || !np || !p->dir || !np->dir || !(src = dir_find(p, name))) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (strlen(newname) > 255) {
        fuse_reply_err(req, ENAMETOOLONG);
        return;
    }
    dst = dir_find(np, newname);
    if (dst) {
        if (flags & RENAME_NOREPLACE) {
            fuse_reply_err(req, EEXIST);
            return;
        }
        if (dst == src) {
            fuse_reply_err(req, 0);
            return;
        }
        if (S_ISDIR(src->mode) && !S_ISDIR(dst->mode)) {
            fuse_reply_err(req, ENOTDIR);
            return;
        }
        if (!S_ISDIR(src->mode) && S_ISDIR(dst->mode)) {
            fuse_reply_err(req, EISDIR);
            return;
        }
        if (S_ISDIR(dst->mode)) {
            if (dst->dir->live) {
                fuse_reply_err(req, ENOTEMPTY);
                return;
            }
            dst->nlink = 0;
            np->nlink--;
        } else {
            dst->nlink--;
        }
        dir_remove(np, newname);
        dst->ctime = now();
        maybe_free(dst);
    }
    fuse_ino_t ino = src->ino;
    dir_remove(p, name);
    dir_add(np, newname, ino);
    if (S_ISDIR(src->mode) && p != np) {
        p->nlink--;
        np->nlink++;
    }
    src->parent = newparent;
    src->ctime = now();
    fuse_reply_err(req, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    COUNT(open);
    struct node *n = get(ino);
    if (!n) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (S_ISDIR(n->mode)) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY) {
        set_size(n, 0);
        n->mtime = n->ctime = now();
    }
    fi->keep_cache = 1;
    fi->fh = 0;
    fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)fi;
    COUNT(read);
    struct node *n = get(ino);
    if (!n) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (off < 0 || (size_t)off >= n->size) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    if (size > n->size - off)
        size = n->size - off;
    fuse_reply_buf(req, n->data + off, size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                     size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    COUNT(write);
    struct node *n = get(ino);
    if (!n) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    size_t end = off + size;
    if (end > n->size) {
        int err = set_size(n, end);
        if (err) {
            fuse_reply_err(req, err);
            return;
        }
    }
    memcpy(n->data + off, buf, size);
    n->mtime = n->ctime = now();
    fuse_reply_write(req, size);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino; (void)fi;
    COUNT(flush);
    fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino; (void)fi;
    COUNT(release);
    fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                     struct fuse_file_info *fi)
{
    (void)ino; (void)datasync; (void)fi;
    COUNT(fsync);
    fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    COUNT(opendir);
    struct node *n = get(ino);
    if (!n || !n->dir) {
        fuse_reply_err(req, n ? ENOTDIR : ENOENT);
        return;
    }
    n->dir->opens++;
    fi->fh = 0;
    fuse_reply_open(req, fi);
}

/* offsets: 0 = start, entry k (0 = ".", 1 = "..", 2+i = slot i) has next-offset k+1 */
static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)fi;
    COUNT(readdir);
    struct node *n = get(ino);
    if (!n || !n->dir) {
        fuse_reply_err(req, n ? ENOTDIR : ENOENT);
        return;
    }
    char *buf = malloc(size);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    size_t pos = 0;
    struct stat st;
    memset(&st, 0, sizeof st);
    for (off_t k = off; k < 2 + (off_t)n->dir->n; k++) {
        const char *name;
        if (k == 0) {
            name = ".";
            st.st_ino = n->ino;
            st.st_mode = S_IFDIR;
        } else if (k == 1) {
            name = "..";
            st.st_ino = n->parent ? n->parent : FUSE_ROOT_ID;
            st.st_mode = S_IFDIR;
        } else {
            struct dent *e = &n->dir->ents[k - 2];
            if (!e->name)
                continue;
            struct node *c = get(e->ino);
            name = e->name;
            st.st_ino = e->ino;
            st.st_mode = c ? c->mode & S_IFMT : 0;
        }
        size_t need = fuse_add_direntry(req, buf + pos, size - pos, name, &st, k + 1);
        if (need > size - pos)
            break;
        pos += need;
    }
    fuse_reply_buf(req, buf, pos);
    free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
    (void)fi;
    COUNT(releasedir);
    struct node *n = get(ino);
    if (n && n->dir && n->dir->opens > 0)
        n->dir->opens--;
    fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
                        struct fuse_file_info *fi)
{
    (void)ino; (void)datasync; (void)fi;
    COUNT(fsyncdir);
    fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    COUNT(statfs);
    struct statvfs sv;
    memset(&sv, 0, sizeof sv);
    sv.f_bsize = 4096;
    sv.f_frsize = 4096;
    sv.f_blocks = 1 << 24;
    sv.f_bfree = sv.f_bavail = 1 << 23;
    sv.f_files = 1 << 24;
    sv.f_ffree = sv.f_favail = (1 << 24) - nodes_live;
    sv.f_namemax = 255;
    fuse_reply_statfs(req, &sv);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                        const char *value, size_t size, int flags)
{
    (void)ino; (void)name; (void)value; (void)size; (void)flags;
    COUNT(setxattr);
    fuse_reply_err(req, ENOTSUP);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                        size_t size)
{
    (void)ino; (void)name; (void)size;
    COUNT(getxattr);
    /* ENODATA, as HelixFS answers: ENOSYS would stop every getxattr for good (one
     * per write and per chown in `tar x`), and with them the xattrs HelixFS serves */
    fuse_reply_err(req, ENODATA);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    (void)ino;
    COUNT(listxattr);
    if (size == 0)
        fuse_reply_xattr(req, 0);
    else
        fuse_reply_buf(req, NULL, 0);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    (void)ino; (void)name;
    COUNT(removexattr);
    fuse_reply_err(req, ENODATA);
}

/* counted stub; ENOSYS makes the kernel stop sending ACCESS (same as unset) */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
    (void)ino; (void)mask;
    COUNT(access);
    fuse_reply_err(req, ENOSYS);
}

static const struct fuse_lowlevel_ops ops = {
    .init = op_init,
    .destroy = op_destroy,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .statfs = op_statfs,
    .setxattr = op_setxattr,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
    .access = op_access,
    .create = op_create,
};

#include "floorfs_locked.h"

/* Like HelixFS's quick wait: poll /dev/fuse without sleeping for up to 100 us
 * before the blocking read, so a request that follows at once costs no wake-up. */
static int spin_loop(struct fuse_session *se)
{
    struct fuse_buf buf;
    memset(&buf, 0, sizeof buf);
    struct pollfd p = { .fd = fuse_session_fd(se), .events = POLLIN };
    int res = 0;
    while (!fuse_session_exited(se)) {
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
            if (poll(&p, 1, 0) > 0)
                break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) > 100000L)
                break;
        }
        res = fuse_session_receive_buf(se, &buf);
        if (res == -EINTR)
            continue;
        if (res <= 0)
            break;
        fuse_session_process_buf(se, &buf);
    }
    free(buf.mem);
    fuse_session_reset(se);
    return res < 0 ? -res : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MOUNTPOINT [fuse args]\n", argv[0]);
        return 2;
    }
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    fuse_opt_add_arg(&args, argv[0]);
    fuse_opt_add_arg(&args, "-o");
    fuse_opt_add_arg(&args, "fsname=floorfs,default_permissions");
    int block = 0; /* --block: sleep in read() at once, no polling (one CPU) */
    int locked = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--block") == 0)
            block = 1;
        else if (strcmp(argv[i], "--locked") == 0)
            locked = 1;
        else if (strcmp(argv[i], "--uring") == 0) {
            /* the ring's threads block in io_uring_enter; polling /dev/fuse beside
             * them would only spin for the odd FORGET */
            locked = block = 1;
            fuse_opt_add_arg(&args, "-o");
            fuse_opt_add_arg(&args, "io_uring");
        } else
            fuse_opt_add_arg(&args, argv[i]);
    }

    struct node *root = new_node(S_IFDIR | 0755, NULL);
    root->parent = FUSE_ROOT_ID;
    root->nlookup = 1;
    if (root->ino != FUSE_ROOT_ID) {      /* ino 0 is never used */
        /* next_ino starts at 1, so this cannot happen */
        return 1;
    }

    main_thread = pthread_self();
    const struct fuse_lowlevel_ops *table = locked ? &locked_ops : &ops;
    struct fuse_session *se = fuse_session_new(&args, table, sizeof *table, NULL);
    if (!se)
        return 1;
    if (fuse_set_signal_handlers(se) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);

    if (fuse_session_mount(se, argv[1]) != 0)
        return 1;
    printf("mounted floorfs\n");
    fflush(stdout);

    int ret = block ? fuse_session_loop(se) : spin_loop(se);

    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    dump_counters("unmount");
    fuse_opt_free_args(&args);
    return ret ? 1 : 0;
}
