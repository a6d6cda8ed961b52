/* Stripeback: the embeddable C API (C99; compiles as C and as C++).
 *
 * Handles (all opaque, all created and freed by this API):
 *   sb_options  settings of one job (and the callbacks: progress, log, storages)
 *   sb_catalog  an opened catalog directory (the record of every backup)
 *   sb_job      one backup, restore or validation, run once, with its result
 *
 * Life cycle: sb_options_new -> sb_options_set... -> sb_catalog_open -> sb_job_new ->
 * sb_job_run (blocks until the job ends) -> sb_job_result_json / typed accessors ->
 * sb_job_free, sb_catalog_free, sb_options_free.
 *
 * Errors: every entry point returns an sb_status (or a value documented with its own
 * failure value) and never lets an exception or a signal escape. The message of the last
 * failure of a handle is sb_options_errmsg, sb_catalog_errmsg or sb_job_errmsg of it: it
 * names the object and the cause, in lower case; it stays valid until the next call on that
 * handle or its free.
 *
 * Threads: no global state. Different handles may be used on different threads at once
 * (two jobs in one process, each with its own options, catalog and job handles). One
 * handle is used by one thread at a time, except sb_job_cancel, which any thread (and a
 * signal handler) may call while sb_job_run runs. A job keeps a pointer to its catalog,
 * which must outlive it; its options are copied when it is made (the callbacks' `user`
 * pointers are kept and must outlive it too).
 *
 * The library never writes to stdout or stderr and changes no process-wide setting unless
 * asked (see the "nfs_tune_malloc" option): log lines go to the callback set with
 * sb_options_set_log, or nowhere.
 */
#ifndef STRIPEBACK_STRIPEBACK_H
#define STRIPEBACK_STRIPEBACK_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define SB_API
#elif defined(__GNUC__)
#define SB_API __attribute__((visibility("default")))
#else
#define SB_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Version: MAJOR * 10000 + MINOR * 100 + PATCH of the header compiled against;
 * sb_version_number() is that of the library linked. */
#define SB_VERSION_MAJOR 0
#define SB_VERSION_MINOR 1
#define SB_VERSION_PATCH 0
#define SB_VERSION_NUMBER (SB_VERSION_MAJOR * 10000 + SB_VERSION_MINOR * 100 + SB_VERSION_PATCH)
#define SB_VERSION_STRING "0.1.0"

SB_API int sb_version_number(void);
SB_API const char* sb_version_string(void);

/* Status codes. Stable: values are never renumbered; new ones are added at the end. */
typedef enum sb_status {
  SB_OK = 0,
  SB_ERROR = 1,            /* the job failed (I/O, a server gone, ...): see sb_job_errmsg */
  SB_INVALID_ARGUMENT = 2, /* a null handle, an unknown option key, a bad value */
  SB_NOT_FOUND = 3,        /* no such catalog, backup, file or source */
  SB_CORRUPT = 4,          /* a piece or the catalog failed its checks */
  SB_CANCELLED = 5,        /* sb_job_cancel was called; the job ended cleanly */
  SB_UNSUPPORTED = 6,      /* left out of this build, or not possible on that medium */
  SB_NOMEM = 7,            /* out of memory */
  SB_EXISTS = 8,           /* a restore target exists (set "force" or "delta") */
  SB_WRONG_KEY = 9,        /* the passphrase or key does not open the backup */
  SB_BUSY = 10,            /* the catalog or a drive is held by someone else */
  SB_NO_SPACE = 11,        /* the destination is full */
  SB_PARTIAL = 12,         /* a backup with "partial" stopped at its "duration" */
  SB_CHANGED = 13,         /* a complete backup in which files changed while read */
  SB_TIMED_OUT = 14,       /* a deadline passed (a backup's "duration" without "partial") */
  SB_SUSPICIOUS = 15,      /* a complete backup the ransomware alarm fired on: it looks like
                            * encrypted or destroyed data; the result JSON's "suspicious"
                            * has the evidence, and the backup compared with is kept */
  SB_TAMPERED = 16         /* the catalog's seal shows records changed, removed or added
                            * without its key (docs/security.md); nothing was done */
} sb_status;

/* The name of a status ("SB_OK", ...); never null. */
SB_API const char* sb_status_name(sb_status status);

typedef struct sb_options sb_options;
typedef struct sb_catalog sb_catalog;
typedef struct sb_job sb_job;

/* The message of the last failure on a handle, "" after success, a fixed text for a null
 * pointer. Never null. */
SB_API const char* sb_options_errmsg(const sb_options* opts);
SB_API const char* sb_catalog_errmsg(const sb_catalog* cat);
SB_API const char* sb_job_errmsg(const sb_job* job);
/* The same for any of the three handles, untyped: kept for callers written before the typed
 * functions above, which the compiler can check. */
SB_API const char* sb_errmsg(const void* handle);

/* ---- Options -------------------------------------------------------------------------
 * Keys (values as text; typed setters below take numbers and booleans) are those of the
 * option schema, one per CLI flag of backup, restore and validate, checked alike (the full
 * table: docs/embedding.md). The main ones:
 *   source            backup: a file or directory to back up (each call adds one)
 *   destination       backup: where the pieces go (a directory, or "scheme://..." of a
 *                     storage registered with sb_options_add_storage)
 *   target            restore: the directory the files are restored below
 *   path              restore/validate: limit to this original file or directory (adds)
 *   tag               backup: the tag recorded; restore/validate: pick by tag
 *   backup_id         restore/validate: this backup only
 *   channels          parallel channels (1..256, default 2), or "auto" (chosen per job)
 *   compress          none | low | medium | high | zstd:N | auto (cpu_budget: its cores)
 *   files_per_set, max_open_files, max_piece_size, section_size, checkpoint_interval,
 *   rate, job_rate    channel controls as in the CLI (sizes like "64M", rates bytes/s)
 *   buffers           I/O buffers per channel, 2..4096 (as --buffers); backup, restore and
 *                     validate. Unset: the engine's buffer rule picks (16 MiB per channel,
 *                     in 1M, 512K or 256K buffers by how many files a channel reads at once)
 *   buffer_size       the size of each, a multiple of 4K from 4K to 64M, like "256K" (as
 *                     --buffer-size). All of a job's buffers must fit in half of the
 *                     machine's memory: a job that would need more is refused when made
 *   duration          backup: the longest it may run, "HH:MM", "HH:MM:SS" or "90m" (as
 *                     --duration); when it ends, the backup fails with SB_TIMED_OUT, or
 *                     with "partial" keeps what is done; minimize_load paces the backup
 *                     to end inside it
 *   partial           backup: with "duration", keep and record the files finished when it
 *                     ends and return SB_PARTIAL; files backed up least recently go first
 *                     (bool)
 *   one_file_system   backup: do not cross mount points (bool)
 *   skip_unreadable   backup: skip (and record) directories that cannot be read instead
 *                     of failing (bool)
 *   exclude           backup: leave out what this glob matches (each call adds one);
 *                     exclude_from: a file of such patterns, one a line (docs/selection.md)
 *   not_backed_up_since  backup: skip files a backup begun since then holds as they are:
 *                     "2d", "36h" (back from when the job is made) or "2026-12-07T14:45:32Z"
 *   resume            backup: continue this interrupted backup (an id, or "last")
 *   level             backup: 0 or 1 (incremental backups); cumulative, require_parent
 *                     (bool), change_unit (8K..1M)
 *   optimize, force   backup: skip unchanged files / read all; restore: overwrite
 *   delta             restore: update existing files in place (bool); no_fallback (bool)
 *   check_logical     backup: check pages ("auto", "postgres"); max_corrupt, page_size
 *   encrypt           backup: encrypt (bool; needs a key source below)
 *   key_file, passphrase_file, passphrase_env   where the key comes from (names only)
 *   direct            O_DIRECT where the file system allows (bool, default true)
 *   sample            validate: a share of frames, "10%"; seed: its seed; part "K/N";
 *                     max_duration
 *   tape_volumes, tape_block_size, tape_io, tape_wait, label_blank, tape_drive   tape
 *   progress_interval_ms   how often the progress callback runs and the status file is
 *                     rewritten (100..60000, default 250)
 *   status_file       while the job runs, publish it in <catalog>/jobs/ for `stripeback
 *                     status` in another process, as a job of the CLI is (bool, default
 *                     true; the file is removed when the job ends)
 *   nfs_tune_malloc   let the NFS client raise glibc's malloc thresholds for the process
 *                     (bool, default false: no process-wide side effect)
 * Booleans: "1", "0", "true", "false", "yes", "no", "on", "off".
 * An unknown key or a bad value returns SB_INVALID_ARGUMENT and names both in
 * sb_options_errmsg; the options keep their earlier value. Values are checked again when the
 * job is made. */
SB_API sb_options* sb_options_new(void); /* null only when out of memory */
SB_API void sb_options_free(sb_options* opts);
SB_API sb_status sb_options_set(sb_options* opts, const char* key, const char* value);
SB_API sb_status sb_options_set_int(sb_options* opts, const char* key, int64_t value);
SB_API sb_status sb_options_set_bool(sb_options* opts, const char* key, int value);
/* Clears a key back to its default (a list key: empties the list). */
SB_API sb_status sb_options_unset(sb_options* opts, const char* key);

/* ---- Progress ------------------------------------------------------------------------
 * The picture the engine publishes for `stripeback status` and the status endpoint.
 * Everything a callback receives is valid only during the call. */
typedef struct sb_channel_progress {
  uint32_t channel;     /* 1-based */
  const char* state;    /* "starting", "reading", "writing", "throttled", "working",
                           "idle", "done" */
  double state_s;       /* seconds in that state */
  uint64_t bytes;       /* bytes this channel has done */
} sb_channel_progress;

typedef struct sb_progress {
  const char* operation;  /* "backup", "restore", "validate" */
  uint64_t backup_id;     /* 0 until the backup is registered (or for a validation) */
  uint64_t bytes_done;
  uint64_t bytes_total;   /* may grow while the job plans */
  double rate;            /* bytes per second over the last seconds */
  double eta_s;           /* seconds left, -1 while unknown */
  double elapsed_s;
  int finished;           /* 1 in the last call of the job, which always comes */
  const char* bound_by;   /* at the end: "read", "write", "cpu", "rate limit", ... */
  const char* stage;      /* at the end: the stage that bound it, e.g. "source read (local)" */
  const char* suggestion; /* at the end: what to change ("" when nothing) */
  size_t channel_count;
  const sb_channel_progress* channels;
} sb_progress;

/* Called every progress_interval_ms on the job's progress thread (one per job, not the one
 * in sb_job_run), and once more, with finished = 1, when the job ends: that last call is on
 * the thread in sb_job_run, after the progress thread has ended, before sb_job_run returns.
 * Calls never overlap. bytes_done never decreases between calls. The callback must not call
 * sb_job_free on its job; it may call sb_job_cancel. */
typedef void (*sb_progress_fn)(const sb_progress* progress, void* user);
SB_API sb_status sb_options_set_progress(sb_options* opts, sb_progress_fn fn, void* user);

/* ---- Logging -------------------------------------------------------------------------
 * Without a log callback the library logs nowhere. The callback runs on whichever of the
 * job's threads logged (channel threads, several at once): it must be thread-safe. */
typedef enum sb_log_level {
  SB_LOG_TRACE = 0,
  SB_LOG_DEBUG = 1,
  SB_LOG_INFO = 2,
  SB_LOG_WARN = 3,
  SB_LOG_ERROR = 4
} sb_log_level;
typedef void (*sb_log_fn)(sb_log_level level, const char* message, void* user);
/* Messages below `min_level` are not passed. */
SB_API sb_status sb_options_set_log(sb_options* opts, sb_log_fn fn, void* user,
                                    sb_log_level min_level);

/* ---- Caller-supplied storage -----------------------------------------------------------
 * A medium of the caller's, reached through these functions: registered on an options
 * handle under a scheme ("mystore"), it serves every location "mystore://REST" of jobs made
 * with those options, as backup destination and as restore/validate source (the catalog
 * records "mystore://REST" as the destination; to restore, register the same scheme).
 * Paths passed are "REST/..." (what follows "scheme://"). Each function returns 0 or a
 * negative errno (-ENOENT: not found, -EEXIST, -ENOSPC, ...). Files are opened, read and
 * written by one channel thread at a time, but different files on several threads at once:
 * the functions must be thread-safe. `user` is passed to every call. */
typedef struct sb_storage_stat {
  uint64_t size;
  uint32_t mode;  /* S_IFREG | S_IFDIR with permission bits */
  int64_t mtime_ns;
} sb_storage_stat;

typedef struct sb_storage_ops {
  uint32_t version;  /* SB_STORAGE_OPS_VERSION */
  /* flags: SB_OPEN_READ, or SB_OPEN_WRITE (create, truncate). *file: the caller's handle. */
  int (*open)(void* user, const char* path, int flags, void** file);
  /* Reads up to `len` bytes at `offset`; *done: bytes read (0 at end of file). */
  int (*read)(void* user, void* file, uint64_t offset, void* buf, size_t len, size_t* done);
  /* Writes all `len` bytes at `offset`. */
  int (*write)(void* user, void* file, uint64_t offset, const void* buf, size_t len);
  int (*sync)(void* user, void* file); /* the file's data durable */
  int (*stat)(void* user, const char* path, sb_storage_stat* out);
  /* Calls `entry` for each name in the directory (not "." or ".."). */
  int (*list)(void* user, const char* dir, void (*entry)(void* ctx, const char* name),
              void* ctx);
  int (*remove)(void* user, const char* path);
  int (*rename)(void* user, const char* from, const char* to);
  int (*close)(void* user, void* file);
  /* Makes a directory (and its missing parents); 0 when it exists. May be null. */
  int (*mkdir)(void* user, const char* path);
  void* user;
} sb_storage_ops;
#define SB_STORAGE_OPS_VERSION 1
#define SB_OPEN_READ 1
#define SB_OPEN_WRITE 2
/* `scheme`: letters, digits, '+', '-', '.', starting with a letter, not one the library
 * serves itself (file, nfs, tape). The ops are copied; `user` must outlive the jobs. */
SB_API sb_status sb_options_add_storage(sb_options* opts, const char* scheme,
                                        const sb_storage_ops* ops);

/* ---- Catalog -------------------------------------------------------------------------- */
#define SB_CATALOG_CREATE 1 /* create the directory and an empty catalog if missing */
/* Opens the catalog in `dir`. On success *out is the handle. On failure *out is still a
 * handle (free it) whose sb_catalog_errmsg says why, unless out of memory (*out null). */
SB_API sb_status sb_catalog_open(const char* dir, unsigned flags, sb_catalog** out);
SB_API void sb_catalog_free(sb_catalog* cat);

/* Reads the catalog again and renders its backups as the JSON document `stripeback list
 * --json` prints. *json is owned by the handle, valid until the next call on it. */
SB_API sb_status sb_catalog_list(sb_catalog* cat, const char** json);

/* The main figures of the backups the last sb_catalog_list saw, in id order. The caller
 * sets `size` to sizeof(sb_backup_info) before sb_catalog_backup_at: a later library whose
 * struct has grown fills only the members that fit in it, so a program built against this
 * header keeps working. */
typedef struct sb_backup_info {
  uint32_t size; /* set by the caller: sizeof(sb_backup_info) */
  uint64_t id;
  const char* tag;
  const char* status; /* "complete", "partial", "failed", "running", "damaged", ... */
  uint64_t files;
  uint64_t bytes;
  int64_t start_time_ns; /* wall clock, ns since the epoch */
  const char* destination;
} sb_backup_info;
SB_API size_t sb_catalog_backup_count(const sb_catalog* cat);
/* Fills *out for backup `index` (0-based); strings owned by the handle as list's JSON.
 * SB_INVALID_ARGUMENT when out->size is below the size of the first version of the struct
 * (all of the members above). */
SB_API sb_status sb_catalog_backup_at(const sb_catalog* cat, size_t index, sb_backup_info* out);

/* ---- Jobs ----------------------------------------------------------------------------- */
typedef enum sb_operation {
  SB_OP_BACKUP = 0,
  SB_OP_RESTORE = 1,
  SB_OP_VALIDATE = 2, /* read and verify every frame of a backup, write nothing */
  SB_OP_VALIDATE_SOURCE = 3 /* read and check the sources as a backup would, write nothing */
} sb_operation;

/* Checks the options for the operation; nothing is opened or written yet. On failure *out
 * is still a handle whose sb_job_errmsg says why (free it), unless out of memory. */
SB_API sb_status sb_job_new(sb_catalog* cat, sb_operation op, const sb_options* opts,
                            sb_job** out);
/* Runs the job on the calling thread until it ends; once per job. Returns its status:
 * SB_OK, SB_CANCELLED (after sb_job_cancel: the channels stopped, the pieces written were
 * removed and the catalog records the backup failed with "backup cancelled"), SB_PARTIAL,
 * SB_SUSPICIOUS, SB_CHANGED, or the failure (with sb_job_errmsg), by the kind of the first failure: a
 * destination that filled up (a storage's -ENOSPC, the end of a medium) SB_NO_SPACE, a
 * damaged piece or page SB_CORRUPT, a wrong key SB_WRONG_KEY, a file or backup missing
 * SB_NOT_FOUND, a "duration" that ended SB_TIMED_OUT, a drive or catalog held elsewhere
 * SB_BUSY, any other I/O failure SB_ERROR. */
SB_API sb_status sb_job_run(sb_job* job);
/* Asks a running (or not yet started) job to stop. Any thread; async-signal-safe: it only
 * stores to a lock-free atomic flag. */
SB_API void sb_job_cancel(sb_job* job);
SB_API void sb_job_free(sb_job* job);

/* Results, after sb_job_run. The JSON is the document `stripeback backup|restore|validate
 * --json` prints, owned by the handle (null before run or when the job failed before it
 * started). */
SB_API sb_status sb_job_status(const sb_job* job);
SB_API const char* sb_job_result_json(const sb_job* job);
SB_API const char* sb_job_state(const sb_job* job); /* "complete", "partial", "failed", "" */
SB_API uint64_t sb_job_backup_id(const sb_job* job);
SB_API uint64_t sb_job_files(const sb_job* job);
SB_API uint64_t sb_job_bytes_read(const sb_job* job);
/* Bytes the job wrote: a backup's pieces; a restore's files (a delta restore: only the
 * blocks that differed); 0 for a validation. */
SB_API uint64_t sb_job_bytes_written(const sb_job* job);
SB_API double sb_job_elapsed_s(const sb_job* job);

#ifdef __cplusplus
}
#endif

#endif /* STRIPEBACK_STRIPEBACK_H */
