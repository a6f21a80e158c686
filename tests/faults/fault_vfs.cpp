// Test support: a SQLite VFS shim that injects storage faults into the real plantstore binary.
// Loaded with LD_PRELOAD, it registers itself as the default VFS before main() runs and passes
// every call through to the real one, except while a fault file exists in the directory named
// by PLANTSTORE_FAULT_DIR:
//   fail-write   every write returns SQLITE_IOERR_WRITE (an I/O error)
//   full         every write returns SQLITE_FULL (no space left)
//   fail-sync    every fsync returns SQLITE_IOERR_FSYNC
//   fail-read    every read returns SQLITE_IOERR_READ (pages SQLite has cached are still
//                served from its cache: a fresh connection sees the fault at once)
//   cannot-open  opening a database file fails with SQLITE_CANTOPEN (as in a read-only
//                directory; the tests run as root, where permissions do not stop writes)
//   stall-sync   every fsync waits while the file exists (at most 60 s): a store that does
//                not answer
// Tests create and delete those files while the server runs.
//
// Power loss, with PLANTSTORE_POWER_LOSS=1 in the environment: the shim keeps an undo record
// of every write and truncation not yet made durable by an fsync of its file (the bytes and
// size the disk held at that file's last fsync). When the file `power-cut` appears, a watcher
// thread stops all file I/O, puts every file back as its last fsync left it (what a disk
// would hold after losing power; the page cache is lost), and SIGKILLs the process. While
// `lying-sync` exists, fsync returns success but syncs nothing and keeps the undo records: a
// disk (or a synchronous=NORMAL setting) that acknowledges before data is durable, which the
// power-loss test must catch.
//
// Written by hand: SQLite's shim examples (vfstrace, vfslog) are not packaged as libraries, and
// no packaged tool simulates power loss for one process's files.
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// Plain pointers: the constructor below may run before this file's C++ dynamic initializers.
sqlite3_vfs* real_vfs = nullptr;
const char* fault_dir = nullptr;

bool fault_active(const char* name) {
    return fault_dir != nullptr &&
           ::access((std::string(fault_dir) + "/" + name).c_str(), F_OK) == 0;
}

// Our file object, followed in the same allocation by the real VFS's file object.
struct FaultFile {
    sqlite3_file base;
    sqlite3_file* real;
    std::string* path;  // for power loss: which file's undo records this file adds to
};

sqlite3_file* real_of(sqlite3_file* file) { return reinterpret_cast<FaultFile*>(file)->real; }

// Power loss. Each file's state at its last fsync: its size, and the bytes that writes since
// then overwrote below that size (oldest first). Guarded by power_mutex, which every write,
// truncation and fsync holds while power loss is simulated, so the cut sees no write half done.
struct UndoRecord {
    sqlite3_int64 offset;
    std::string bytes;
};
struct FileUndo {
    sqlite3_int64 synced_size = -1;  // -1: nothing written since the last fsync
    std::vector<UndoRecord> records;
};
bool power_loss = false;
std::mutex* power_mutex = nullptr;
std::map<std::string, FileUndo>* undo = nullptr;

// Before `file` changes [offset, offset + amount) (amount < 0: truncation to `offset`), keeps
// what its last fsync left there. Called with power_mutex held.
int record_undo(sqlite3_file* file, sqlite3_int64 offset, sqlite3_int64 amount) {
    FileUndo& entry = (*undo)[*reinterpret_cast<FaultFile*>(file)->path];
    sqlite3_file* real = real_of(file);
    sqlite3_int64 size = 0;
    if (const int rc = real->pMethods->xFileSize(real, &size); rc != SQLITE_OK) return rc;
    if (entry.synced_size < 0) entry.synced_size = size;
    const sqlite3_int64 end = amount < 0 ? size : offset + amount;
    const sqlite3_int64 kept_end = std::min(end, std::min(size, entry.synced_size));
    if (kept_end <= offset) return SQLITE_OK;  // only bytes the last fsync never saw
    UndoRecord record{offset, std::string(static_cast<std::size_t>(kept_end - offset), '\0')};
    const int rc = real->pMethods->xRead(real, record.bytes.data(),
                                         static_cast<int>(record.bytes.size()), offset);
    if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) return rc;
    entry.records.push_back(std::move(record));
    return SQLITE_OK;
}

// Puts every file back as its last fsync left it, then dies as a machine losing power would.
[[noreturn]] void cut_power() {
    power_mutex->lock();  // never released: no write may follow
    for (const auto& [path, entry] : *undo) {
        if (entry.synced_size < 0) continue;
        const int fd = ::open(path.c_str(), O_WRONLY);
        if (fd < 0) continue;  // deleted since: nothing of it can be read back either
        for (auto record = entry.records.rbegin(); record != entry.records.rend(); ++record) {
            if (::pwrite(fd, record->bytes.data(), record->bytes.size(), record->offset) < 0) {
                std::abort();
            }
        }
        if (::ftruncate(fd, entry.synced_size) != 0) std::abort();
        ::close(fd);
    }
    ::kill(::getpid(), SIGKILL);
    for (;;) ::pause();
}

void watch_for_power_cut() {
    for (;;) {
        if (fault_active("power-cut")) cut_power();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

int fault_close(sqlite3_file* file) {
    delete reinterpret_cast<FaultFile*>(file)->path;
    return real_of(file)->pMethods->xClose(real_of(file));
}
int fault_read(sqlite3_file* file, void* into, int amount, sqlite3_int64 offset) {
    if (fault_active("fail-read")) return SQLITE_IOERR_READ;
    return real_of(file)->pMethods->xRead(real_of(file), into, amount, offset);
}
int fault_write(sqlite3_file* file, const void* from, int amount, sqlite3_int64 offset) {
    if (fault_active("fail-write")) return SQLITE_IOERR_WRITE;
    if (fault_active("full")) return SQLITE_FULL;
    if (!power_loss) return real_of(file)->pMethods->xWrite(real_of(file), from, amount, offset);
    std::lock_guard lock(*power_mutex);
    if (const int rc = record_undo(file, offset, amount); rc != SQLITE_OK) return rc;
    return real_of(file)->pMethods->xWrite(real_of(file), from, amount, offset);
}
int fault_truncate(sqlite3_file* file, sqlite3_int64 size) {
    if (!power_loss) return real_of(file)->pMethods->xTruncate(real_of(file), size);
    std::lock_guard lock(*power_mutex);
    if (const int rc = record_undo(file, size, -1); rc != SQLITE_OK) return rc;
    return real_of(file)->pMethods->xTruncate(real_of(file), size);
}
int fault_sync(sqlite3_file* file, int flags) {
    if (fault_active("fail-sync")) return SQLITE_IOERR_FSYNC;
    for (int waited = 0; waited < 6000 && fault_active("stall-sync"); ++waited) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!power_loss) return real_of(file)->pMethods->xSync(real_of(file), flags);
    std::lock_guard lock(*power_mutex);
    if (fault_active("lying-sync")) return SQLITE_OK;  // acknowledged, not durable
    const int rc = real_of(file)->pMethods->xSync(real_of(file), flags);
    if (rc == SQLITE_OK) undo->erase(*reinterpret_cast<FaultFile*>(file)->path);
    return rc;
}
int fault_file_size(sqlite3_file* file, sqlite3_int64* size) {
    return real_of(file)->pMethods->xFileSize(real_of(file), size);
}
int fault_lock(sqlite3_file* file, int level) {
    return real_of(file)->pMethods->xLock(real_of(file), level);
}
int fault_unlock(sqlite3_file* file, int level) {
    return real_of(file)->pMethods->xUnlock(real_of(file), level);
}
int fault_check_reserved_lock(sqlite3_file* file, int* out) {
    return real_of(file)->pMethods->xCheckReservedLock(real_of(file), out);
}
int fault_file_control(sqlite3_file* file, int op, void* arg) {
    return real_of(file)->pMethods->xFileControl(real_of(file), op, arg);
}
int fault_sector_size(sqlite3_file* file) {
    return real_of(file)->pMethods->xSectorSize(real_of(file));
}
int fault_device_characteristics(sqlite3_file* file) {
    return real_of(file)->pMethods->xDeviceCharacteristics(real_of(file));
}
int fault_shm_map(sqlite3_file* file, int region, int size, int extend, void volatile** out) {
    return real_of(file)->pMethods->xShmMap(real_of(file), region, size, extend, out);
}
int fault_shm_lock(sqlite3_file* file, int offset, int n, int flags) {
    return real_of(file)->pMethods->xShmLock(real_of(file), offset, n, flags);
}
void fault_shm_barrier(sqlite3_file* file) { real_of(file)->pMethods->xShmBarrier(real_of(file)); }
int fault_shm_unmap(sqlite3_file* file, int delete_flag) {
    return real_of(file)->pMethods->xShmUnmap(real_of(file), delete_flag);
}
int fault_fetch(sqlite3_file* file, sqlite3_int64 offset, int amount, void** out) {
    return real_of(file)->pMethods->xFetch(real_of(file), offset, amount, out);
}
int fault_unfetch(sqlite3_file* file, sqlite3_int64 offset, void* page) {
    return real_of(file)->pMethods->xUnfetch(real_of(file), offset, page);
}

// Version 3, as the unix VFS's own methods (shared memory for WAL, memory-mapped reads).
const sqlite3_io_methods fault_methods = {
    3,
    fault_close,
    fault_read,
    fault_write,
    fault_truncate,
    fault_sync,
    fault_file_size,
    fault_lock,
    fault_unlock,
    fault_check_reserved_lock,
    fault_file_control,
    fault_sector_size,
    fault_device_characteristics,
    fault_shm_map,
    fault_shm_lock,
    fault_shm_barrier,
    fault_shm_unmap,
    fault_fetch,
    fault_unfetch,
};

int fault_open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
    auto* fault_file = reinterpret_cast<FaultFile*>(file);
    fault_file->base.pMethods = nullptr;
    if ((flags & SQLITE_OPEN_MAIN_DB) != 0 && fault_active("cannot-open")) return SQLITE_CANTOPEN;
    fault_file->real = reinterpret_cast<sqlite3_file*>(fault_file + 1);
    const int rc = real_vfs->xOpen(real_vfs, name, fault_file->real, flags, out_flags);
    if (fault_file->real->pMethods != nullptr) {
        fault_file->base.pMethods = &fault_methods;
        fault_file->path = new std::string(name != nullptr ? name : "");
    }
    return rc;
}

// The rest pass the real VFS itself, whose functions read their own pAppData.
int fault_delete(sqlite3_vfs*, const char* name, int sync_dir) {
    return real_vfs->xDelete(real_vfs, name, sync_dir);
}
int fault_access(sqlite3_vfs*, const char* name, int flags, int* out) {
    return real_vfs->xAccess(real_vfs, name, flags, out);
}
int fault_full_pathname(sqlite3_vfs*, const char* name, int size, char* out) {
    return real_vfs->xFullPathname(real_vfs, name, size, out);
}
void* fault_dl_open(sqlite3_vfs*, const char* name) { return real_vfs->xDlOpen(real_vfs, name); }
void fault_dl_error(sqlite3_vfs*, int size, char* out) { real_vfs->xDlError(real_vfs, size, out); }
void (*fault_dl_sym(sqlite3_vfs*, void* handle, const char* symbol))() {
    return real_vfs->xDlSym(real_vfs, handle, symbol);
}
void fault_dl_close(sqlite3_vfs*, void* handle) { real_vfs->xDlClose(real_vfs, handle); }
int fault_randomness(sqlite3_vfs*, int size, char* out) {
    return real_vfs->xRandomness(real_vfs, size, out);
}
int fault_sleep(sqlite3_vfs*, int microseconds) { return real_vfs->xSleep(real_vfs, microseconds); }
int fault_current_time(sqlite3_vfs*, double* out) { return real_vfs->xCurrentTime(real_vfs, out); }
int fault_get_last_error(sqlite3_vfs*, int size, char* out) {
    return real_vfs->xGetLastError(real_vfs, size, out);
}
int fault_current_time_int64(sqlite3_vfs*, sqlite3_int64* out) {
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

sqlite3_vfs fault_vfs;

__attribute__((constructor)) void register_fault_vfs() {
    real_vfs = sqlite3_vfs_find(nullptr);
    if (real_vfs == nullptr) std::abort();
    fault_dir = std::getenv("PLANTSTORE_FAULT_DIR");
    if (const char* flag = std::getenv("PLANTSTORE_POWER_LOSS"); flag && std::string(flag) == "1") {
        power_loss = true;
        power_mutex = new std::mutex;
        undo = new std::map<std::string, FileUndo>;
        std::thread(watch_for_power_cut).detach();
    }
    fault_vfs.iVersion = 2;
    fault_vfs.szOsFile = static_cast<int>(sizeof(FaultFile)) + real_vfs->szOsFile;
    fault_vfs.mxPathname = real_vfs->mxPathname;
    fault_vfs.zName = "plantstore-faults";
    fault_vfs.xOpen = fault_open;
    fault_vfs.xDelete = fault_delete;
    fault_vfs.xAccess = fault_access;
    fault_vfs.xFullPathname = fault_full_pathname;
    fault_vfs.xDlOpen = fault_dl_open;
    fault_vfs.xDlError = fault_dl_error;
    fault_vfs.xDlSym = fault_dl_sym;
    fault_vfs.xDlClose = fault_dl_close;
    fault_vfs.xRandomness = fault_randomness;
    fault_vfs.xSleep = fault_sleep;
    fault_vfs.xCurrentTime = fault_current_time;
    fault_vfs.xGetLastError = fault_get_last_error;
    fault_vfs.xCurrentTimeInt64 = fault_current_time_int64;
    if (sqlite3_vfs_register(&fault_vfs, 1) != SQLITE_OK) std::abort();
}

}  // namespace
