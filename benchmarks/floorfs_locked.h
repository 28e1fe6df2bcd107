/*
 * floorfs_locked.h: floorfs's operations behind one mutex, for loops that call them
 * from several threads. libfuse >= 3.18 over io_uring (-o io_uring) serves each CPU's
 * queue on its own thread, and FORGET still comes through /dev/fuse on the main one;
 * floorfs keeps plain arrays, so every operation takes the lock. Uncontended, it costs
 * tens of nanoseconds against a ~14 us round trip. Each wrapper also counts the requests
 * served off the main thread: over io_uring that is all but FORGET and INIT, on
 * /dev/fuse it stays 0, which tells which transport a mount really used.
 * Included by floorfs.c after its operations.
 */
#include <pthread.h>

static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t main_thread;


#define LOCKED(op, params, args)                                                   \
    static void locked_##op params                                                 \
    {                                                                              \
        pthread_mutex_lock(&big_lock);                                             \
        if (!pthread_equal(pthread_self(), main_thread))                           \
            off_main++;                                                            \
        op_##op args;                                                              \
        pthread_mutex_unlock(&big_lock);                                           \
    }

typedef fuse_req_t R;
typedef fuse_ino_t I;
typedef struct fuse_file_info F;
typedef const char *S;

LOCKED(init, (void *u, struct fuse_conn_info *c), (u, c))
LOCKED(destroy, (void *u), (u))
LOCKED(lookup, (R r, I p, S n), (r, p, n))
LOCKED(forget, (R r, I i, uint64_t n), (r, i, n))
LOCKED(forget_multi, (R r, size_t c, struct fuse_forget_data *f), (r, c, f))
LOCKED(getattr, (R r, I i, F *f), (r, i, f))
LOCKED(setattr, (R r, I i, struct stat *a, int s, F *f), (r, i, a, s, f))
LOCKED(readlink, (R r, I i), (r, i))
LOCKED(mknod, (R r, I p, S n, mode_t m, dev_t d), (r, p, n, m, d))
LOCKED(mkdir, (R r, I p, S n, mode_t m), (r, p, n, m))
LOCKED(unlink, (R r, I p, S n), (r, p, n))
LOCKED(rmdir, (R r, I p, S n), (r, p, n))
LOCKED(symlink, (R r, S t, I p, S n), (r, t, p, n))
LOCKED(rename, (R r, I p, S n, I np, S nn, unsigned int f), (r, p, n, np, nn, f))
LOCKED(link, (R r, I i, I np, S nn), (r, i, np, nn))
LOCKED(open, (R r, I i, F *f), (r, i, f))
LOCKED(read, (R r, I i, size_t s, off_t o, F *f), (r, i, s, o, f))
LOCKED(write, (R r, I i, S b, size_t s, off_t o, F *f), (r, i, b, s, o, f))
LOCKED(flush, (R r, I i, F *f), (r, i, f))
LOCKED(release, (R r, I i, F *f), (r, i, f))
LOCKED(fsync, (R r, I i, int d, F *f), (r, i, d, f))
LOCKED(opendir, (R r, I i, F *f), (r, i, f))
LOCKED(readdir, (R r, I i, size_t s, off_t o, F *f), (r, i, s, o, f))
LOCKED(releasedir, (R r, I i, F *f), (r, i, f))
LOCKED(fsyncdir, (R r, I i, int d, F *f), (r, i, d, f))
LOCKED(statfs, (R r, I i), (r, i))
LOCKED(setxattr, (R r, I i, S n, S v, size_t s, int f), (r, i, n, v, s, f))
LOCKED(getxattr, (R r, I i, S n, size_t s), (r, i, n, s))
LOCKED(listxattr, (R r, I i, size_t s), (r, i, s))
LOCKED(removexattr, (R r, I i, S n), (r, i, n))
LOCKED(access, (R r, I i, int m), (r, i, m))
LOCKED(create, (R r, I p, S n, mode_t m, F *f), (r, p, n, m, f))

#define LOCKED_OP(op) .op = locked_##op,
static const struct fuse_lowlevel_ops locked_ops = {
    LOCKED_OP(init) LOCKED_OP(destroy) LOCKED_OP(lookup) LOCKED_OP(forget)
    LOCKED_OP(forget_multi) LOCKED_OP(getattr) LOCKED_OP(setattr) LOCKED_OP(readlink)
    LOCKED_OP(mknod) LOCKED_OP(mkdir) LOCKED_OP(unlink) LOCKED_OP(rmdir)
    LOCKED_OP(symlink) LOCKED_OP(rename) LOCKED_OP(link) LOCKED_OP(open)
    LOCKED_OP(read) LOCKED_OP(write) LOCKED_OP(flush) LOCKED_OP(release)
    LOCKED_OP(fsync) LOCKED_OP(opendir) LOCKED_OP(readdir) LOCKED_OP(releasedir)
    LOCKED_OP(fsyncdir) LOCKED_OP(statfs) LOCKED_OP(setxattr) LOCKED_OP(getxattr)
    LOCKED_OP(listxattr) LOCKED_OP(removexattr) LOCKED_OP(access) LOCKED_OP(create)
};
