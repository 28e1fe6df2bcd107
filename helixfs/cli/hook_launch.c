/* The compiled hook launcher (ADR 0080): hook_forward.py's mounted path without an
 * interpreter's start (~10 ms of the 20 ms budget).
 *
 *   hook_launch PYTHON -P -S ROOT/helixfs/cli/hook_launch.py --store STORE EVENT
 *
 * Its arguments are the Python launcher's whole command line. When the store's daemon
 * answers, it does what hook_forward.py does: the same socket address (wire.address_of),
 * the same request bytes (the JSON of _request, escaped as json's encode_basestring_ascii
 * escapes), the same three frames back; it prints the daemon's stdout and exits 0, and
 * logs to STORE/hooks.log what hook_forward.py would log.
 *
 * In every other case (no daemon, arguments it does not expect, input or a folder name
 * that is not UTF-8, any error before the request is sent) it execs the Python launcher
 * with the same arguments and the same stdin, so the behaviour is the Python one. After
 * the request is sent it never retries (the daemon may have acted on it): an error is
 * logged and it exits 0 with no output, as hook_forward.py does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_INPUT (8u << 20)
#define MAX_FRAME (1u << 30)
#define ANSWER_SECONDS 5
#define SHORT_ADDRESS 100
#define LOG_LIMIT (1L << 20)
#define LOG_REASON_CHARS 2000
#define PROTOCOL_VERSION 1

typedef struct {
    char *data;
    size_t len, cap;
} buffer;

static char **python_argv;          /* the Python launcher's command line */
static const char *store, *event;
static buffer input;                /* stdin as read so far: replayed to Python */
static void (*sigpipe_before)(int) = SIG_DFL;

static void grow(buffer *b, size_t more) {
    if (b->len + more <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data)
        _exit(0);
    b->data = data;
    b->cap = cap;
}

static void put(buffer *b, const char *data, size_t len) {
    grow(b, len);
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

/* Python's turn: its stdin is what this process read of ours, then the rest. */
static void exec_python(void) {
    if (input.len) {
        int fd = memfd_create("hook-input", 0);
        if (fd < 0) {
            FILE *file = tmpfile();
            fd = file ? dup(fileno(file)) : -1;
        }
        if (fd < 0 || write(fd, input.data, input.len) != (ssize_t)input.len ||
            lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) < 0)
            _exit(0);
        close(fd);
    }
    signal(SIGPIPE, sigpipe_before);
    execv(python_argv[0], python_argv);
    _exit(0); /* no interpreter: nothing a hook could say */
}

/* ----- STORE/hooks.log, as hook_forward.log writes it ----- */

static void halve(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    size_t size = (size_t)st.st_size, keep = size - size / 2;
    char *data = malloc(keep ? keep : 1);
    ssize_t got = data ? pread(fd, data, keep, (off_t)(size / 2)) : -1;
    close(fd);
    if (got == (ssize_t)keep) {
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t wrote = write(fd, data, keep);
            (void)wrote;
            close(fd);
        }
    }
    free(data);
}

static int is_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* `' '.join(reason.split())[:2000]`: whitespace runs made one space, 2000 characters. */
static void log_reason(const char *reason, size_t len) {
    if (!store || !*store)
        return;
    buffer line = {0};
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    put(&line, stamp, strlen(stamp));
    put(&line, " ", 1);
    put(&line, event, strlen(event));
    put(&line, " ", 1);
    size_t chars = 0, i = 0;
    int pending_space = 0;
    while (i < len && chars <= LOG_REASON_CHARS) {
        unsigned char c = (unsigned char)reason[i];
        if (is_space(c)) {
            pending_space = chars > 0;
            i++;
            continue;
        }
        if (pending_space) {
            if (chars == LOG_REASON_CHARS)
                break;
            put(&line, " ", 1);
            chars++;
            pending_space = 0;
        }
        if ((c & 0xc0) != 0x80) { /* a character starts here */
            if (chars == LOG_REASON_CHARS)
                break;
            chars++;
        }
        put(&line, (const char *)&reason[i], 1);
        i++;
    }
    put(&line, "\n", 1);
    buffer path = {0};
    put(&path, store, strlen(store));
    if (path.data[path.len - 1] != '/')
        put(&path, "/", 1);
    put(&path, "hooks.log", sizeof "hooks.log");
    int fd = open(path.data, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd >= 0) {
        ssize_t wrote = write(fd, line.data, line.len);
        (void)wrote;
        off_t size = lseek(fd, 0, SEEK_END);
        close(fd);
        if (size > LOG_LIMIT)
            halve(path.data);
    }
    free(line.data);
    free(path.data);
}

static void log_text(const char *reason) { log_reason(reason, strlen(reason)); }

static void log_errno(int err) {
    char reason[256];
    const char *name = err == EPIPE ? "BrokenPipeError"
                       : err == ECONNRESET ? "ConnectionResetError"
                                           : "OSError"; /* the names Python's log gives */
    if (err == EAGAIN || err == EWOULDBLOCK)
        snprintf(reason, sizeof reason, "TimeoutError: timed out");
    else
        snprintf(reason, sizeof reason, "%s: [Errno %d] %s", name, err, strerror(err));
    log_text(reason);
}

/* ----- the request: json's encode_basestring_ascii, on text that must be UTF-8 ----- */

/* The next code point of strict UTF-8 at s[*i], or -1 (Python would replace it: its turn). */
static long next_code_point(const unsigned char *s, size_t len, size_t *i) {
    unsigned char c = s[*i];
    if (c < 0x80) {
        *i += 1;
        return c;
    }
    int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;
    if (extra < 0 || c > 0xf4 || *i + (size_t)extra >= len)
        return -1;
    long cp = c & (0x3f >> extra);
    for (int k = 1; k <= extra; k++) {
        unsigned char cc = s[*i + (size_t)k];
        if ((cc & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (cc & 0x3f);
    }
    static const long least[] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *i += (size_t)extra + 1;
    return cp;
}

static void put_u(buffer *b, long unit) {
    char text[8];
    snprintf(text, sizeof text, "\\u%04lx", unit);
    put(b, text, 6);
}

/* `"..."` as json.encoder.encode_basestring_ascii writes it; 0 when s is not UTF-8. */
static int put_quoted(buffer *b, const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    put(b, "\"", 1);
    for (size_t i = 0; i < len;) {
        long cp = next_code_point(s, len, &i);
        if (cp < 0)
            return 0;
        switch (cp) {
        case '\\': put(b, "\\\\", 2); break;
        case '"': put(b, "\\\"", 2); break;
        case '\b': put(b, "\\b", 2); break;
        case '\f': put(b, "\\f", 2); break;
        case '\n': put(b, "\\n", 2); break;
        case '\r': put(b, "\\r", 2); break;
        case '\t': put(b, "\\t", 2); break;
        default:
            if (cp >= ' ' && cp <= '~') {
                char c = (char)cp;
                put(b, &c, 1);
            } else if (cp > 0xffff) {
                long v = cp - 0x10000;
                put_u(b, 0xd800 | ((v >> 10) & 0x3ff));
                put_u(b, 0xdc00 | (v & 0x3ff));
            } else {
                put_u(b, cp);
            }
        }
    }
    put(b, "\"", 1);
    return 1;
}

/* `{"v": 1, "argv": ["hook", EVENT, "--input", TEXT], "cwd": CWD}`, or 0. */
static int build_request(buffer *request) {
    char *here = getcwd(NULL, 0); /* _cwd(): "/" when the folder is gone */
    const char *cwd = here ? here : "/";
    char head[64];
    put(request, "\0\0\0\0", 4); /* the frame's length, filled in once known */
    snprintf(head, sizeof head, "{\"v\": %d, \"argv\": [\"hook\", ", PROTOCOL_VERSION);
    put(request, head, strlen(head));
    if (!put_quoted(request, event, strlen(event)))
        return 0;
    put(request, ", \"--input\", ", 13);
    if (!put_quoted(request, input.data ? input.data : "", input.len))
        return 0;
    put(request, "], \"cwd\": ", 10);
    return put_quoted(request, cwd, strlen(cwd)) && (put(request, "}", 1), 1);
}

/* ----- the daemon ----- */

static int read_input(void) {
    for (;;) {
        if (input.len >= MAX_INPUT)
            return 1; /* hook_forward.py reads no more than this either */
        grow(&input, 65536);
        size_t room = input.cap - input.len;
        if (room > MAX_INPUT - input.len)
            room = MAX_INPUT - input.len;
        ssize_t got = read(0, input.data + input.len, room);
        if (got == 0)
            return 1;
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        input.len += (size_t)got;
    }
}

/* A socket connected to the store's daemon (wire.address_of's address); -1 with errno
 * set when connect() failed, -2 when there was no address to connect to. */
static int connect_daemon(void) {
    buffer path = {0};
    size_t store_len = strlen(store);
    put(&path, store, store_len);
    if (store_len && store[store_len - 1] != '/')
        put(&path, "/", 1);
    put(&path, "control.sock", sizeof "control.sock");
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    int folder = -1;
    if (path.len - 1 < SHORT_ADDRESS) {
        memcpy(address.sun_path, path.data, path.len);
    } else { /* past sun_path's 107 bytes: through the folder, as /proc/self/fd/N/ */
        char *slash = strrchr(path.data, '/');
        *slash = '\0';
        folder = open(path.data[0] ? path.data : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (folder < 0)
            return -2;
        int n = snprintf(address.sun_path, sizeof address.sun_path, "/proc/self/fd/%d/%s",
                         folder, slash + 1);
        if (n < 0 || (size_t)n >= sizeof address.sun_path)
            return -2;
    }
    free(path.data);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return -2;
    struct timeval limit = {.tv_sec = ANSWER_SECONDS};
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    int ok = connect(sock, (struct sockaddr *)&address, sizeof address) == 0;
    int err = errno;
    if (folder >= 0)
        close(folder);
    if (!ok) {
        close(sock);
        errno = err;
        return -1;
    }
    return sock;
}

/* wire.NO_DAEMON: nobody serves the store (no socket, a dead daemon's leftover...). */
static int no_daemon(int err) {
    return err == ENOENT || err == ENOTDIR || err == ELOOP || err == ECONNREFUSED ||
           err == ENOTSOCK;
}

static int send_all(int sock, const char *data, size_t len) {
    while (len) {
        ssize_t sent = send(sock, data, len, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent <= 0)
            return 0;
        data += sent;
        len -= (size_t)sent;
    }
    return 1;
}

/* Exactly `len` bytes, or a line in hooks.log and exit 0 (hook_forward._exactly). */
static void recv_exactly(int sock, char *into, size_t len) {
    while (len) {
        ssize_t got = recv(sock, into, len, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            log_errno(errno);
            _exit(0);
        }
        if (got == 0) {
            log_text("ConnectionError: the daemon closed the connection before it answered");
            _exit(0);
        }
        into += got;
        len -= (size_t)got;
    }
}

static buffer recv_frame(int sock) {
    unsigned char size_bytes[4];
    recv_exactly(sock, (char *)size_bytes, 4);
    uint32_t size = (uint32_t)size_bytes[0] << 24 | (uint32_t)size_bytes[1] << 16 |
                    (uint32_t)size_bytes[2] << 8 | size_bytes[3];
    if (size > MAX_FRAME) {
        char reason[64];
        snprintf(reason, sizeof reason, "ValueError: a frame of %u bytes", size);
        log_text(reason);
        _exit(0);
    }
    buffer frame = {0};
    grow(&frame, (size_t)size + 1);
    recv_exactly(sock, frame.data, size);
    frame.len = size;
    frame.data[size] = '\0';
    return frame;
}

/* `code` of `{"v": 1, "code": N}` (hook_forward._exit_code), or exit 0 with a log line. */
static long exit_code(buffer header) {
    const char *at = memmem(header.data, header.len, "\"code\":", 7);
    if (at) {
        const char *p = at + 7, *end = header.data + header.len;
        while (p < end && is_space((unsigned char)*p))
            p++;
        char *after;
        errno = 0;
        long code = strtol(p, &after, 10);
        while (after < end && is_space((unsigned char)*after))
            after++;
        if (after != p && errno == 0 && (after == end || *after == ',' || *after == '}'))
            return code;
    }
    log_text("ValueError: the daemon's header has no exit code");
    _exit(0);
}

static void write_all(const char *data, size_t len) {
    while (len) {
        ssize_t wrote = write(1, data, len);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0) {
            log_errno(errno);
            _exit(0);
        }
        data += wrote;
        len -= (size_t)wrote;
    }
}

static void strip(buffer *b) {
    size_t start = 0;
    while (start < b->len && is_space((unsigned char)b->data[start]))
        start++;
    while (b->len > start && is_space((unsigned char)b->data[b->len - 1]))
        b->len--;
    memmove(b->data, b->data + start, b->len - start);
    b->len -= start;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 0;
    python_argv = argv + 1;
    if (argc < 5 || strcmp(argv[argc - 3], "--store") != 0)
        exec_python(); /* a command line it does not know: Python says why in the log */
    store = argv[argc - 2];
    event = argv[argc - 1];
    sigpipe_before = signal(SIGPIPE, SIG_IGN);
    buffer request = {0};
    if (!read_input() || !build_request(&request))
        exec_python();
    int sock = connect_daemon();
    if (sock == -2 || (sock == -1 && no_daemon(errno)))
        exec_python(); /* no daemon, or a reason Python will find and log */
    if (sock < 0) { /* a daemon that does not take the connection (a full backlog past
                     * 5 s): hook_forward.py logs it and says nothing, and so does this,
                     * rather than wait another 5 s in Python */
        log_errno(errno);
        return 0;
    }
    size_t payload = request.len - 4; /* one write, the frame's length first, as send_frame */
    unsigned char *size = (unsigned char *)request.data;
    size[0] = (unsigned char)(payload >> 24), size[1] = (unsigned char)(payload >> 16);
    size[2] = (unsigned char)(payload >> 8), size[3] = (unsigned char)payload;
    if (!send_all(sock, request.data, request.len)) {
        log_errno(errno); /* the daemon may have begun: no second try */
        return 0;
    }
    long code = exit_code(recv_frame(sock));
    buffer out = recv_frame(sock), said = recv_frame(sock);
    close(sock);
    int said_something = said.len > 0; /* `if code != 0 or said`: before the strip */
    strip(&said);
    if (said_something || code != 0) {
        if (said.len) {
            log_reason(said.data, said.len);
        } else {
            char reason[32];
            snprintf(reason, sizeof reason, "exit %ld", code);
            log_text(reason);
        }
    }
    write_all(out.data, out.len);
    return 0;
}
