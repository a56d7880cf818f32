// Mutex and MutexLock: std::mutex and std::unique_lock with clang's
// thread-safety annotations, so that a field read without its lock fails the
// build (`-Wthread-safety`, the clang build of scripts/dev.sh; docs/threads.md
// "Locks checked by the compiler").
//
//   class Cache {
//     Mutex mu_;
//     std::vector<int> items_ MEMKV_GUARDED_BY(mu_);
//     void AddLocked(int v) MEMKV_REQUIRES(mu_) { items_.push_back(v); }
//    public:
//     void Add(int v) { MutexLock lock(mu_); AddLocked(v); }
//   };
//
// libstdc++'s std::mutex carries no annotations, so the library's mutexes are
// these. Under GCC every annotation expands to nothing and Mutex is exactly a
// std::mutex. A condition variable waits through MutexLock::Wait*, which
// hands the std::unique_lock underneath to a std::condition_variable.
#ifndef MEMKV_BASE_MUTEX_H_
#define MEMKV_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define MEMKV_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define MEMKV_THREAD_ANNOTATION(x)
#endif

#define MEMKV_CAPABILITY(x) MEMKV_THREAD_ANNOTATION(capability(x))
#define MEMKV_SCOPED_CAPABILITY MEMKV_THREAD_ANNOTATION(scoped_lockable)
#define MEMKV_GUARDED_BY(x) MEMKV_THREAD_ANNOTATION(guarded_by(x))
#define MEMKV_PT_GUARDED_BY(x) MEMKV_THREAD_ANNOTATION(pt_guarded_by(x))
#define MEMKV_ACQUIRED_BEFORE(...) MEMKV_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define MEMKV_ACQUIRED_AFTER(...) MEMKV_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define MEMKV_REQUIRES(...) MEMKV_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define MEMKV_ACQUIRE(...) MEMKV_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define MEMKV_RELEASE(...) MEMKV_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define MEMKV_TRY_ACQUIRE(...) MEMKV_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define MEMKV_EXCLUDES(...) MEMKV_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define MEMKV_ASSERT_HELD(x) MEMKV_THREAD_ANNOTATION(assert_capability(x))
#define MEMKV_RETURN_CAPABILITY(x) MEMKV_THREAD_ANNOTATION(lock_returned(x))
// For the rare function whose locking the analysis cannot follow (a lock
// taken in one function and released in another); say why beside it.
#define MEMKV_NO_THREAD_SAFETY_ANALYSIS MEMKV_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace memkv {

class MEMKV_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() MEMKV_ACQUIRE() { mu_.lock(); }
  void unlock() MEMKV_RELEASE() { mu_.unlock(); }
  bool try_lock() MEMKV_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds it (checked by nothing at run time).
  void AssertHeld() const MEMKV_ASSERT_HELD(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope (std::unique_lock): Unlock() and Lock() may
// drop and retake it in between.
class MEMKV_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) MEMKV_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() MEMKV_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() MEMKV_RELEASE() { lock_.unlock(); }
  void Lock() MEMKV_ACQUIRE() { lock_.lock(); }

  // The condition variable's waits, with the lock held before and after.
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <typename Predicate>
  void Wait(std::condition_variable& cv, Predicate pred) {
    cv.wait(lock_, pred);
  }
  template <typename Clock, typename Duration>
  std::cv_status WaitUntil(std::condition_variable& cv, const std::chrono::time_point<Clock, Duration>& when) {
    return cv.wait_until(lock_, when);
  }
  template <typename Clock, typename Duration, typename Predicate>
  bool WaitUntil(std::condition_variable& cv, const std::chrono::time_point<Clock, Duration>& when,
                 Predicate pred) {
    return cv.wait_until(lock_, when, pred);
  }
  template <typename Rep, typename Period>
  std::cv_status WaitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& d) {
    return cv.wait_for(lock_, d);
  }
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& d, Predicate pred) {
    return cv.wait_for(lock_, d, pred);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace memkv

#endif  // MEMKV_BASE_MUTEX_H_
