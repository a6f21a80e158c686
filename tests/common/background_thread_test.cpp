// The rule for background loops: what escapes is reported with the part's name and the loop
// runs again, unless its part was asked to stop; stop() can be asked any number of times, at
// once, and from the loop itself.
#include "common/background_thread.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace plantstore::common {
namespace {

std::mutex reports_mutex;
std::vector<std::string> reports;

void record(std::string_view part, std::string_view what) noexcept {
    std::lock_guard lock(reports_mutex);
    reports.push_back(std::string(part) + ": " + std::string(what));
}

class BackgroundThreadTest : public ::testing::Test {
  protected:
    BackgroundThreadTest() {
        reports.clear();
        set_background_failure_reporter(&record);
    }
    ~BackgroundThreadTest() override { set_background_failure_reporter(nullptr); }
};

TEST_F(BackgroundThreadTest, WhatALoopThrowsIsReportedAndTheLoopRunsAgainUntilItReturns) {
    std::atomic<int> runs{0};
    std::atomic<bool> done{false};
    BackgroundThread thread;
    thread.start(
        "ps-test",
        [&] {
            const int run = ++runs;
            if (run == 1) throw std::runtime_error("first");
            if (run == 2) throw 42;  // not a std::exception
            done = true;             // the third run returns: the loop ended normally
        },
        std::chrono::milliseconds(1));
    for (int i = 0; i < 10'000 && !done; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    thread.stop();
    EXPECT_TRUE(done);
    EXPECT_EQ(runs, 3);
    std::lock_guard lock(reports_mutex);
    EXPECT_EQ(reports,
              (std::vector<std::string>{"ps-test: first",
                                        "ps-test: an exception that is not a std::exception"}));
}

TEST_F(BackgroundThreadTest, NoRestartOnceStopWasAsked) {
    std::atomic<int> runs{0};
    BackgroundThread thread;
    std::atomic<bool> thrown{false};
    thread.start(
        "ps-test",
        [&] {
            ++runs;
            thrown = true;
            throw std::runtime_error("down");
        },
        std::chrono::hours(1));  // a restart would come only after an hour
    for (int i = 0; i < 10'000 && !thrown; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    thread.stop();  // ends the wait for the restart
    EXPECT_EQ(runs, 1);
}

TEST_F(BackgroundThreadTest, StopCanBeAskedManyTimesAtOnceAndFromTheLoop) {
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping = false;
    BackgroundThread thread;
    thread.start("ps-test", [&] {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping; });
        lock.unlock();
        thread.stop();  // from the loop itself: returns without waiting for itself
    });
    {
        std::lock_guard lock(mutex);
        stopping = true;
    }
    wake.notify_all();
    std::vector<std::thread> stoppers;
    for (int i = 0; i < 4; ++i) stoppers.emplace_back([&thread] { thread.stop(); });
    for (auto& stopper : stoppers) stopper.join();
    thread.stop();
    EXPECT_TRUE(thread.stopping());
}

}  // namespace
}  // namespace plantstore::common
