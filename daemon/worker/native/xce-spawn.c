/*
 * xce-spawn: the worker launcher's native fork server (daemon/worker/native-spawner.ts).
 *
 * The launcher (launcher-main.ts, a Node process of about 12 MiB) pays for every fork in page
 * tables, and a job with a memory or cpu limit needed a /bin/sh wrapper only for `ulimit`, Node
 * having no way to set a child's rlimits. This tiny process forks and execs a job layer that the
 * launcher has already checked (direct-job.ts), with the rlimits set, as the wrapper and Node's
 * `detached` spawn would: its own session, signal dispositions default and an empty signal mask,
 * the working directory, stdin /dev/null, stdout/stderr opened as `>>` does, no other descriptor.
 * Everything it opens is close-on-exec, and what it inherited is closed at its start.
 *
 * Protocol (little-endian, as every host XCE runs on: x86-64, aarch64). Every frame, both ways:
 *   u32 length of what follows, u8 type, u32 id, then the type's body.
 * Requests on stdin, any number per write:
 *   1 spawn:  i64 cpu_s (-1: none), i64 memory KiB (-1: none), u32 argc, u32 envc, then
 *             NUL-terminated strings: file, cwd, stdout path, stderr path, argv[argc], env[envc]
 *   2 signal: i32 signal number, sent to the job's process group unless the job was reaped
 * Events on stdout, all of one loop turn in one write:
 *   1 spawned (i32 pid)  2 failed (i32 errno)  3 fallback (the wrapper must run it)
 *   4 unwritable (u8 1: stdout, 2: stderr)     5 ended (i32 exit code or -1, i32 signal or 0)
 * A malformed request is a bug in the launcher: a line on stderr and exit 2 (it restarts us).
 * When stdin closes (the launcher died) it exits and leaves the jobs running, as the launcher does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xce-spawn's protocol is little-endian (spawn-protocol.ts); this host is not"
#endif

enum { REQ_SPAWN = 1, REQ_SIGNAL = 2 };
enum { EV_SPAWNED = 1, EV_FAILED = 2, EV_FALLBACK = 3, EV_UNWRITABLE = 4, EV_ENDED = 5 };
/* The wrapper's cpu hard limit is the soft one plus this (limits.ts CPU_HARD_GRACE_S). */
#define CPU_HARD_GRACE_S 5
/* A request bigger than this is a broken stream, not a job (argv + env are far smaller). */
#define MAX_FRAME (64u << 20)

struct job {
    uint32_t id;
    pid_t pid;
};

static struct job *jobs;
static size_t njobs, capjobs;
static unsigned char *out;
static size_t outlen, outcap;
static int devnull = -1;

static void die(const char *what) {
    fprintf(stderr, "xce-spawn: %s\n", what);
    exit(2);
}

static void *grow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return p;
    size_t n = *cap == 0 ? 64 : *cap;
    while (n < need) n *= 2;
    p = realloc(p, n * size);
    if (p == NULL) die("out of memory");
    *cap = n;
    return p;
}

/* Events are queued and written once per loop turn: a burst of jobs costs the launcher one read. */
static void put(const void *p, size_t n) {
    out = grow(out, &outcap, outlen + n, 1);
    memcpy(out + outlen, p, n);
    outlen += n;
}

static void event(uint8_t type, uint32_t id, const void *body, uint32_t bodylen) {
    uint32_t len = 1 + 4 + bodylen;
    put(&len, 4);
    put(&type, 1);
    put(&id, 4);
    if (bodylen > 0) put(body, bodylen);
}

static void event_i32(uint8_t type, uint32_t id, int32_t v) { event(type, id, &v, 4); }

static void flush_events(void) {
    size_t done = 0;
    while (done < outlen) {
        ssize_t n = write(1, out + done, outlen - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) exit(0); /* the launcher is gone: nobody to tell, the jobs stay */
        done += (size_t)n;
    }
    outlen = 0;
}

static struct job *find_by_id(uint32_t id) {
    for (size_t i = 0; i < njobs; i++)
        if (jobs[i].id == id) return &jobs[i];
    return NULL;
}

/* Every descriptor above 2 closed, once at start: whatever the launcher's Node left open without close-on-exec. */
static void close_above_2(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
#endif
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) return;
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != self) close(fd);
    }
    closedir(d);
}

/*
 * `>>path` as the wrapper's redirection opens it: write-only, append, created 0666 minus the umask.
 * Probed with O_NONBLOCK so that a FIFO cannot block us; anything but a regular file or /dev/null
 * goes back to the wrapper (-2), as direct-job.ts openAppend did. -1: cannot be opened for writing.
 */
static int open_append(const char *path) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
    if (fd < 0) return errno == ENXIO ? -2 : -1;
    struct stat st;
    int ok = fstat(fd, &st) == 0 &&
             (S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)));
    int fl = ok ? fcntl(fd, F_GETFL) : -1;
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        close(fd);
        return -2;
    }
    return fd;
}

/*
 * Whether `ulimit` in the wrapper would set these limits. A non-root process cannot raise a hard
 * limit: the wrapper then says "cannot set the ... limit" and exits 254, so such a job goes back to it.
 */
static int limit_allowed(int resource, rlim_t hard) {
    struct rlimit cur;
    if (geteuid() == 0) return 1;
    if (getrlimit(resource, &cur) != 0) return 0;
    return cur.rlim_max == RLIM_INFINITY || hard <= cur.rlim_max;
}

struct spawn {
    int64_t cpu_s, mem_kib;
    const char *file, *cwd, *outpath, *errpath;
    char **argv, **env;
};

/*
 * In the child: what the wrapper and Node's detached spawn give a job, then exec. Never returns.
 * It runs after vfork, in the parent's memory while the parent waits: system calls only (no
 * malloc, no stdio, nothing that sets state the parent would see, errno aside). Its signal
 * dispositions are its own (vfork does not share them) and the spawner installs no handler.
 */
static void child(const struct spawn *s, int outfd, int errfd, int report) {
    int32_t why[2] = {0, 0}; /* {1, errno}: failed; {2, 0}: an rlimit refused after all (fallback) */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    /* The spawner ignores SIGPIPE and blocks SIGCHLD: the job must inherit neither. */
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0) goto failed;
    if (s->cpu_s >= 0) {
        struct rlimit r = {(rlim_t)s->cpu_s, (rlim_t)s->cpu_s + CPU_HARD_GRACE_S};
        if (setrlimit(RLIMIT_CPU, &r) != 0) goto refused;
    }
    if (s->mem_kib >= 0) {
        struct rlimit r = {(rlim_t)s->mem_kib * 1024, (rlim_t)s->mem_kib * 1024};
        if (setrlimit(RLIMIT_AS, &r) != 0) goto refused;
    }
    if (chdir(s->cwd) != 0) goto failed;
    if (dup2(devnull, 0) < 0 || dup2(outfd, 1) < 0 || dup2(errfd, 2) < 0) goto failed;
    /* Nothing else reaches the job: every descriptor of the spawner above 2 is close-on-exec. */
    execve(s->file, s->argv, s->env);
failed:
    why[0] = 1;
    why[1] = errno;
    goto report;
refused:
    why[0] = 2;
report:
    (void)!write(report, why, sizeof why);
    _exit(127);
}

/* An output file open_append could not open: the wrapper's wording (unwritable), or the wrapper itself. */
static void not_opened(uint32_t id, int result, uint8_t which) {
    if (result == -2) event(EV_FALLBACK, id, NULL, 0);
    else event(EV_UNWRITABLE, id, &which, 1);
}

/* Forks and execs one job; reports spawned, failed, fallback or unwritable. */
static void spawn_job(uint32_t id, const struct spawn *s) {
    /* The wrapper's set-up checks open stdout, then stderr (the first failure is the one told), then it sets the limits. */
    int outfd = open_append(s->outpath);
    if (outfd < 0) {
        not_opened(id, outfd, 1);
        return;
    }
    int errfd = open_append(s->errpath);
    if (errfd < 0) {
        close(outfd);
        not_opened(id, errfd, 2);
        return;
    }
    if ((s->cpu_s >= 0 && !limit_allowed(RLIMIT_CPU, (rlim_t)s->cpu_s + CPU_HARD_GRACE_S)) ||
        (s->mem_kib >= 0 && !limit_allowed(RLIMIT_AS, (rlim_t)s->mem_kib * 1024))) {
        event(EV_FALLBACK, id, NULL, 0);
        goto done;
    }
    /* The child writes why it could not exec on this close-on-exec pipe; end of file: it exec'd. */
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        event_i32(EV_FAILED, id, errno);
        goto done;
    }
    /*
     * vfork: no page tables copied, no copy-on-write faults, and we wait only until the exec (we
     * would wait for the report pipe anyway). Measured against fork: 160 -> 78 us of this process's
     * CPU per job, 750 -> 600 us in the job's.
     */
    pid_t pid = vfork();
    if (pid == 0) child(s, outfd, errfd, report[1]);
    int fork_errno = errno;
    close(report[1]);
    if (pid < 0) {
        event_i32(EV_FAILED, id, fork_errno);
    } else {
        int32_t why[2];
        ssize_t n;
        do n = read(report[0], why, sizeof why);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof why) {
            waitpid(pid, NULL, 0);
            if (why[0] == 2) event(EV_FALLBACK, id, NULL, 0);
            else event_i32(EV_FAILED, id, why[1]);
        } else {
            jobs = grow(jobs, &capjobs, njobs + 1, sizeof *jobs);
            jobs[njobs++] = (struct job){id, pid};
            event_i32(EV_SPAWNED, id, pid);
        }
    }
    close(report[0]);
done:
    close(outfd);
    close(errfd);
}

/* The reader of one request's body: every field bounds-checked, a short one is fatal. */
struct cursor {
    const unsigned char *p, *end;
};

static void take(struct cursor *c, void *dst, size_t n) {
    if ((size_t)(c->end - c->p) < n) die("truncated request");
    memcpy(dst, c->p, n);
    c->p += n;
}

static char *take_str(struct cursor *c) {
    const unsigned char *nul = memchr(c->p, 0, (size_t)(c->end - c->p));
    if (nul == NULL) die("request string without its NUL");
    char *s = (char *)c->p;
    c->p = nul + 1;
    return s;
}

static char **take_strs(struct cursor *c, uint32_t n) {
    if (n > (size_t)(c->end - c->p)) die("string count beyond the request");
    char **v = malloc(((size_t)n + 1) * sizeof *v);
    if (v == NULL) die("out of memory");
    for (uint32_t i = 0; i < n; i++) v[i] = take_str(c);
    v[n] = NULL;
    return v;
}

static void handle(uint8_t type, uint32_t id, struct cursor *c) {
    if (type == REQ_SIGNAL) {
        int32_t sig;
        take(c, &sig, 4);
        struct job *j = find_by_id(id);
        if (j != NULL) kill(-j->pid, sig);
        return;
    }
    if (type != REQ_SPAWN) die("unknown request type");
    struct spawn s;
    uint32_t argc, envc;
    take(c, &s.cpu_s, 8);
    take(c, &s.mem_kib, 8);
    take(c, &argc, 4);
    take(c, &envc, 4);
    s.file = take_str(c);
    s.cwd = take_str(c);
    s.outpath = take_str(c);
    s.errpath = take_str(c);
    if (argc == 0) die("spawn request without argv[0]");
    s.argv = take_strs(c, argc);
    s.env = take_strs(c, envc);
    spawn_job(id, &s);
    free(s.argv);
    free(s.env);
}

/* Handles every whole frame in buf[0, len); returns how many bytes it used. */
static size_t handle_frames(unsigned char *buf, size_t len) {
    size_t at = 0;
    while (len - at >= 4) {
        uint32_t flen;
        memcpy(&flen, buf + at, 4);
        if (flen < 5 || flen > MAX_FRAME) die("bad frame length");
        if (len - at - 4 < flen) break;
        struct cursor c = {buf + at + 4, buf + at + 4 + flen};
        uint8_t type;
        uint32_t id;
        take(&c, &type, 1);
        take(&c, &id, 4);
        handle(type, id, &c);
        at += 4 + flen;
    }
    return at;
}

/* Reaps every job that exited; its group is killed (what it left behind goes with it), then told. */
static void reap(void) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < njobs; i++) {
            if (jobs[i].pid != pid) continue;
            kill(-pid, SIGKILL);
            int32_t ends[2] = {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                               WIFSIGNALED(status) ? WTERMSIG(status) : 0};
            event(EV_ENDED, jobs[i].id, ends, sizeof ends);
            jobs[i] = jobs[--njobs];
            break;
        }
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        puts("xce-spawn 1");
        return 0;
    }
    /* Nothing the launcher's Node left open reaches a job; all we open below is close-on-exec. */
    close_above_2();
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) die("cannot open /dev/null");
    signal(SIGPIPE, SIG_IGN); /* a write to a dead launcher fails with EPIPE: we exit then */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) die("cannot make a signalfd");
    unsigned char *in = NULL;
    size_t inlen = 0, incap = 0;
    for (;;) {
        struct pollfd fds[2] = {{0, POLLIN, 0}, {sfd, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            die("poll failed");
        }
        if (fds[1].revents != 0) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) continue;
            reap();
        }
        if (fds[0].revents != 0) {
            in = grow(in, &incap, inlen + 65536, 1);
            ssize_t n = read(0, in + inlen, incap - inlen);
            if (n == 0) break; /* the launcher died: leave the jobs running, as it does */
            if (n < 0 && errno != EINTR && errno != EAGAIN) break;
            if (n > 0) inlen += (size_t)n;
            size_t used = handle_frames(in, inlen);
            memmove(in, in + used, inlen - used);
            inlen -= used;
        }
        if (outlen > 0) flush_events();
    }
    flush_events();
    return 0;
}
