#include "engine.h"

#include "common/log.h"
#include "executor.h"

namespace conflux {

void Completion::set(const Outcome& o) {
  std::lock_guard<std::mutex> lock(mu_);
  outcome_ = o;
  done_ = true;
  cv_.notify_all();
}

Outcome Completion::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return outcome_;
}

Engine::~Engine() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Outcome Engine::execute(std::span<const std::unique_ptr<Op>> ops, const std::vector<Stream*>& streams,
                        bool checked) {
  Outcome out;
  if (!checked) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) out = Outcome{failed_.status, "communicator failed earlier: " + failed_.message};
  }
  if (out.ok()) {
    try {
      executeBatch(ctx_, ops);
    } catch (const Error& e) {
      out = Outcome{e.status(), e.what()};
    } catch (const std::exception& e) {
      out = Outcome{Status::kInternalError, e.what()};
    }
    if (!out.ok()) {
      logWarn(out.message);
      bool first = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        first = failed_.ok();
        if (first) failed_ = out;
      }
      if (first && onFailure_ && out.status != Status::kInvalidArgument) onFailure_(out);
    }
  }
  for (Stream* s : streams) s->completed(out);
  return out;
}

Outcome Engine::runBlocking(Batch batch) {
  std::unique_lock<std::mutex> lock(mu_);
  if (queue_.empty() && !busy_) {
    if (!failed_.ok()) return Outcome{failed_.status, "communicator failed earlier: " + failed_.message};
    busy_ = true;
    lock.unlock();
    Outcome out = execute(batch.ops, batch.streams, true);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
    return out;
  }
  lock.unlock();
  auto done = std::make_shared<Completion>();
  enqueue(std::move(batch), done);
  return done->wait();
}

Outcome Engine::runBlocking(std::unique_ptr<Op> op) {
  std::unique_lock<std::mutex> lock(mu_);
  if (queue_.empty() && !busy_) {
    if (!failed_.ok()) return Outcome{failed_.status, "communicator failed earlier: " + failed_.message};
    busy_ = true;
    lock.unlock();
    static const std::vector<Stream*> kNoStreams;
    Outcome out = execute(std::span<const std::unique_ptr<Op>>(&op, 1), kNoStreams, true);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
    return out;
  }
  lock.unlock();
  Batch b;
  b.ops.push_back(std::move(op));
  return runBlocking(std::move(b));
}

void Engine::enqueue(Batch batch, std::shared_ptr<Completion> done) {
  for (Stream* s : batch.streams) s->enqueued();
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(Item{std::move(batch), std::move(done)});
  if (!thread_.joinable()) thread_ = std::thread(&Engine::threadMain, this);
  cv_.notify_all();
}

void Engine::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

Outcome Engine::asyncError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

void Engine::threadMain() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || (!queue_.empty() && !busy_); });
    if (stop_ && queue_.empty()) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Outcome out = execute(item.batch.ops, item.batch.streams, false);
    if (item.done) item.done->set(out);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace conflux
