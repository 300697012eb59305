// StreamReader's read-ahead (contract in stream_reader.h): one thread
// parses records (Parse: reading the source, the stream checksum, the
// checks) into a queue bounded by bytes, and Next hands them over in
// order. The thread stops at the first error or the end of the input,
// which it queues like a record, so the caller sees exactly what a reader
// without read-ahead would have returned.
//
// Payload buffers go round: Next gives the caller the queued buffer and
// keeps the caller's old one (its capacity) for the thread to fill next,
// so a long stream of 128 KiB writes reuses a few buffers instead of
// faulting in fresh memory for every block.
#include <deque>
#include <optional>
#include <thread>
#include <utility>

#include "zfs/send_format/stream_reader.h"
#include "zfs/util/mutex.h"
#include "zfs/util/thread_name.h"

namespace uzfs::send {

struct StreamReader::Ahead {
  struct Item {
    Result<Record> rec;
    std::vector<uint8_t> payload;
    Position at;
  };

  size_t max_bytes = 0;
  std::function<void()> abandon;
  Mutex mu;
  CondVar changed;  // an item queued or taken, or stopping
  std::deque<Item> queue UZFS_GUARDED_BY(mu);
  size_t queued_bytes UZFS_GUARDED_BY(mu) = 0;
  std::vector<std::vector<uint8_t>> spares UZFS_GUARDED_BY(mu);  // at most max_bytes of them
  size_t spare_bytes UZFS_GUARDED_BY(mu) = 0;
  bool stopping UZFS_GUARDED_BY(mu) = false;
  bool finished UZFS_GUARDED_BY(mu) = false;  // the thread queued its last item
  std::thread thread;

  static size_t Size(const Item& i) { return kRecordSize + i.payload.size(); }
};

// (Here rather than in stream_reader.cc: the unique_ptr<Ahead> they
// create and destroy needs Ahead whole.)
StreamReader::StreamReader(Source source) : source_(std::move(source)) {}

StreamReader::~StreamReader() {
  if (ahead_ == nullptr) return;
  bool finished;
  {
    MutexLock l(&ahead_->mu);
    ahead_->stopping = true;
    finished = ahead_->finished;
  }
  ahead_->changed.SignalAll();
  if (!finished && ahead_->abandon) ahead_->abandon();
  ahead_->thread.join();
}

void StreamReader::ReadAhead(size_t max_bytes, std::function<void()> abandon) {
  if (ahead_ != nullptr) return;
  ahead_ = std::make_unique<Ahead>();
  Ahead& a = *ahead_;
  a.max_bytes = max_bytes;
  a.abandon = std::move(abandon);
  a.thread = std::thread([this, &a] {
    NameThisThread("recv_read");
    while (true) {
      std::vector<uint8_t> buf;
      {
        MutexLock l(&a.mu);
        while (!a.stopping && !a.queue.empty() && a.queued_bytes >= a.max_bytes) a.changed.Wait(&a.mu);
        if (a.stopping) return;
        if (!a.spares.empty()) {
          buf = std::move(a.spares.back());
          a.spares.pop_back();
          a.spare_bytes -= buf.capacity();
        }
      }
      Result<Record> rec = Parse(&buf);
      const bool last = !rec.ok();
      {
        MutexLock l(&a.mu);
        a.queue.push_back(Ahead::Item{std::move(rec), std::move(buf), Position{swap_, offset_, records_}});
        a.queued_bytes += Ahead::Size(a.queue.back());
        a.finished = last;
      }
      a.changed.SignalAll();
      if (last) return;
    }
  });
}

Result<Record> StreamReader::NextAhead(std::vector<uint8_t>* payload) {
  Ahead& a = *ahead_;
  std::optional<Ahead::Item> item;
  {
    MutexLock l(&a.mu);
    while (a.queue.empty()) a.changed.Wait(&a.mu);
    item.emplace(std::move(a.queue.front()));
    a.queue.pop_front();
    a.queued_bytes -= Ahead::Size(*item);
    if (payload->capacity() > 0 && a.spare_bytes + payload->capacity() <= a.max_bytes) {
      a.spare_bytes += payload->capacity();
      a.spares.push_back(std::move(*payload));
    }
  }
  a.changed.SignalAll();
  *payload = std::move(item->payload);
  if (item->rec.ok()) seen_ = item->at;
  return std::move(item->rec);
}

}  // namespace uzfs::send
