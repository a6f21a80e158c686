#include "store/postgres/pg_plant_store.hpp"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/background_thread.hpp"
#include "common/time_text.hpp"
#include "store/postgres/committed_batch.hpp"
#include "store/postgres/event_listener.hpp"
#include "store/postgres/pg_webhook_repository.hpp"
#include "store/postgres/pipelined_connection.hpp"
#include "store/postgres/schema.hpp"
#include "store/postgres/statements.hpp"
#include "store/write_queue.hpp"

namespace plantstore::store::postgres {

namespace asio = boost::asio;

namespace {

// A read's result (ReadResult or EventRead) that says it could not be answered, and why.
template <typename Result = ReadResult>
Result read_unavailable(const std::string& reason) {
    Result result;
    result.reason = reason;
    return result;
}

const char* const kReadOne = "SELECT name, tag FROM plants WHERE tenant = $1 AND id = $2";
const char* const kPage =
    "SELECT id, name, tag FROM plants WHERE tenant = $1 AND id >= $2 ORDER BY id LIMIT $3";
const char* const kUsage = "SELECT plants, max_plants, event_bytes FROM tenants WHERE tenant = $1";

std::vector<std::pair<std::string, std::string>> prepared_statements() {
    return {{"insert_plants", insert_plants_statement()},
            {"delete_plant", delete_plant_statement()},
            {"delete_plant_if", delete_plant_if_statement()},
            {"update_plant", update_plant_statement()},
            {"lock_tenants", kLockTenants},
            {"append_events", append_events_statement()},
            {"durability_mark", kDurabilityMark},
            {"read_one", kReadOne},
            {"page", kPage},
            {"tagged_page", kTaggedPage},
            {"read_events", kReadEvents},
            {"usage", kUsage}};
}

// Whether `error` can come from the data of one write of a batch: a data exception (SQLSTATE
// class 22, a value out of range or too long), an integrity constraint (23) or a program limit
// exceeded (54, an index entry too large), as opposed to the connection, the server or the
// statements themselves.
bool from_one_rows_data(const PgError& error) {
    const std::string_view state = error.sqlstate();
    return state.starts_with("22") || state.starts_with("23") || state.starts_with("54");
}

// The first statement result that is not what `expected` says, as an error; nullopt when all
// are fine.
std::optional<PgError> first_failure(const std::vector<Result>& results, std::size_t expected) {
    if (results.size() != expected) {
        return PgError({}, "PostgreSQL answered " + std::to_string(results.size()) +
                               " results for " + std::to_string(expected) + " statements");
    }
    for (const Result& result : results) {
        const auto status = PQresultStatus(result.get());
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
            return result_error(result.get(), "batch");
        }
    }
    return std::nullopt;
}

}  // namespace

class PgPlantStore::Engine {
  public:
    struct Pending : WriteRequest {
        int attempts = 0;  ///< transactions it was part of without an answer
        /// Runs in a transaction of its own: its batch failed on an error of one row's data.
        bool alone = false;
    };
    struct Writer {
        std::unique_ptr<PipelinedConnection> connection;
        bool busy = false;          ///< a batch is in flight on it
        std::uint64_t batches = 0;  ///< sent on this connection (kClearStagedEventsEvery)
    };

    explicit Engine(Options options)
        : options_(std::move(options)),
          targets_(connect_targets(options_.conninfo)),
          work_(io_.get_executor()),
          close_timer_(io_),
          queue_(options_.writes.max_pending) {
        // Migrations first, so that prepares find the tables; their connection is kept for
        // pruning (a server start opened it only to close it again).
        pruner_ = for_pruning(open_current_schema(options_.conninfo));
        writer_up_.assign(std::max<std::size_t>(1, options_.write_connections), false);
        for (std::size_t i = 0; i < writer_up_.size(); ++i) {
            writers_.push_back({connection(writer_up_, i, &writer_error_), false});
        }
        reader_up_.assign(std::max<std::size_t>(1, options_.read_connections), false);
        for (std::size_t i = 0; i < reader_up_.size(); ++i) {
            readers_.push_back(connection(reader_up_, i, nullptr));
        }
        asio::post(io_, [this] {
            for (auto& writer : writers_) writer.connection->start();
            for (auto& reader : readers_) reader->start();
        });
        thread_.start("ps-pg-write", [this] { run(); });
        // Serve only once every connection is up (or say why the writer cannot be).
        std::unique_lock lock(mutex_);
        const auto all_up = [](const std::vector<bool>& up) {
            return std::all_of(up.begin(), up.end(), [](bool one) { return one; });
        };
        const bool settled = started_.wait_for(lock, std::chrono::seconds(10), [&] {
            return (all_up(writer_up_) && all_up(reader_up_)) || !writer_error_.empty();
        });
        if (!all_up(writer_up_)) {
            const std::string reason =
                settled ? writer_error_ : std::string("timed out connecting to PostgreSQL");
            lock.unlock();
            close();
            throw PgError({}, reason);
        }
        if (options_.writes.observer != nullptr)
            listener_.emplace(options_.conninfo, *options_.writes.observer);
    }

    // A connection (preparing every statement, so that any can serve any request) that records
    // in up[index] whether it is connected and, for writers, in `error` why not.
    std::unique_ptr<PipelinedConnection> connection(std::vector<bool>& up, std::size_t index,
                                                    std::string* error) {
        PipelinedConnection::Options connection_options;
        connection_options.targets = targets_;
        connection_options.answer_timeout = options_.answer_timeout;
        connection_options.session = {kSessionSettings.begin(), kSessionSettings.end()};
        connection_options.prepared = prepared_statements();
        connection_options.on_state = [this, &up, index, error](
                                          bool ready, const std::string& reason, std::size_t host) {
            if (ready) reconnect_others(host);
            std::lock_guard lock(mutex_);
            up[index] = ready;
            if (!ready && error != nullptr) *error = reason;
            started_.notify_all();
        };
        return std::make_unique<PipelinedConnection>(io_, std::move(connection_options));
    }

    ~Engine() {
        try {
            close();
        } catch (const std::exception& error) {  // joining the event loop's thread failed
            if (options_.writes.observer != nullptr) {
                options_.writes.observer->on_maintenance_failed(std::string("closing the store: ") +
                                                                error.what());
            }
        }
    }

    void enqueue(Pending pending) {
        const char* refusal = nullptr;
        {
            pending.accepted = std::chrono::steady_clock::now();
            std::lock_guard lock(mutex_);
            refusal = queue_.try_push(pending);
            if (refusal == nullptr) {
                if (!kick_posted_) {
                    kick_posted_ = true;
                    asio::post(io_, [this] {
                        {
                            std::lock_guard inner(mutex_);
                            kick_posted_ = false;
                        }
                        start_batch();
                    });
                }
                return;
            }
        }
        pending.done(WriteResult::unavailable_because(refusal));
    }

    void read(std::string tenant, domain::PlantId id, ReadCallback done) {
        submit_read<ReadResult>(
            {"read_one", {}, {std::move(tenant), std::to_string(id)}},
            [id](const PGresult* result) {
                ReadResult read;
                read.outcome = PQntuples(result) == 0 ? ReadResult::Outcome::not_found
                                                      : ReadResult::Outcome::found;
                if (PQntuples(result) > 0) {
                    read.plants.push_back(
                        {id, {std::string(text_at(result, 0, 0)), optional_text_at(result, 0, 1)}});
                }
                return read;
            },
            std::move(done));
    }

    void list(std::string tenant, const ListQuery& query, ReadCallback done) {
        if (query.after == std::numeric_limits<domain::PlantId>::max()) {
            ReadResult empty;
            empty.outcome = ReadResult::Outcome::found;  // nothing can come after the largest
            done(std::move(empty));
            return;
        }
        Statement statement{
            query.tag ? "tagged_page" : "page",
            {},
            {std::move(tenant),
             std::to_string(query.after ? *query.after + 1
                                        : std::numeric_limits<domain::PlantId>::min()),
             std::to_string(static_cast<std::int64_t>(query.limit) + 1)}};
        if (query.tag) statement.parameters.emplace_back(*query.tag);
        const auto limit = static_cast<std::size_t>(query.limit);
        submit_read<ReadResult>(
            std::move(statement),
            [limit](const PGresult* result) {
                ReadResult page;
                page.outcome = ReadResult::Outcome::found;
                const int rows = PQntuples(result);
                for (int row = 0; row < rows; ++row) {
                    page.plants.push_back(
                        {int64_at(result, row, 0),
                         {std::string(text_at(result, row, 1)), optional_text_at(result, row, 2)}});
                }
                page.more = page.plants.size() > limit;
                if (page.more) page.plants.pop_back();
                return page;
            },
            std::move(done));
    }

    void read_events(std::string tenant, std::int64_t after, int limit, EventReadCallback done) {
        submit_read<EventRead>(
            {"read_events", {}, {std::move(tenant), std::to_string(after), std::to_string(limit)}},
            [](const PGresult* result) {
                EventRead read;
                read.outcome = EventRead::Outcome::found;
                const int rows = PQntuples(result);
                for (int row = 0; row < rows; ++row) {
                    if (int64_at(result, row, 0) == 0) {  // the bounds, first
                        read.first = int64_at(result, row, 1);
                        read.last = int64_at(result, row, 2);
                        continue;
                    }
                    const auto type = domain::parse_event_type(text_at(result, row, 3));
                    if (!type) throw PgError({}, "an event of an unknown type");
                    read.events.push_back({int64_at(result, row, 1),
                                           *type,
                                           int64_at(result, row, 2),
                                           {int64_at(result, row, 4),
                                            {std::string(text_at(result, row, 5)),
                                             optional_text_at(result, row, 6)}}});
                }
                if (read.first == 0) read.first = read.last + 1;
                return read;
            },
            std::move(done));
    }

    void usage(std::string tenant, UsageCallback done) {
        submit_read<PlantUsage>(
            {"usage", {}, {std::move(tenant)}},
            [default_quota = options_.writes.max_plants_per_tenant](const PGresult* result) {
                PlantUsage usage;
                usage.outcome = PlantUsage::Outcome::found;
                const bool row = PQntuples(result) > 0;
                usage.plants = row ? int64_at(result, 0, 0) : 0;
                usage.limit = effective_plant_quota(
                    row ? optional_int64_at(result, 0, 1) : std::nullopt, default_quota);
                usage.event_bytes = row ? int64_at(result, 0, 2) : 0;
                return usage;
            },
            std::move(done));
    }

    std::size_t prune_events(std::int64_t before, std::size_t limit) {
        return prune([&](PGconn* connection) {
            const Result tenants = exec(connection, "SELECT tenant FROM tenants ORDER BY tenant");
            std::size_t pruned = 0;
            for (int row = 0; row < PQntuples(tenants.get()) && pruned < limit; ++row) {
                const Result deleted =
                    exec(connection, kPruneEvents,
                         {std::string(text_at(tenants.get(), row, 0)), std::to_string(before),
                          std::to_string(limit - pruned)});
                pruned += static_cast<std::size_t>(int64_at(deleted.get(), 0, 0));
            }
            return pruned;
        });
    }

    std::size_t prune_event_bytes(std::int64_t max_bytes, std::size_t limit) {
        return prune([&](PGconn* connection) {
            const Result over =
                exec(connection, kTenantsOverEventBytes, {std::to_string(max_bytes)});
            std::size_t pruned = 0;
            for (int row = 0; row < PQntuples(over.get()) && pruned < limit; ++row) {
                const Result deleted =
                    exec(connection, kPruneEventBytes,
                         {std::string(text_at(over.get(), row, 0)),
                          std::to_string(int64_at(over.get(), row, 1) - max_bytes),
                          std::to_string(limit - pruned)});
                pruned += static_cast<std::size_t>(int64_at(deleted.get(), 0, 0));
            }
            return pruned;
        });
    }

    Health health() const {
        std::lock_guard lock(mutex_);
        Health health = queue_.health();
        if (health.ready &&
            std::none_of(writer_up_.begin(), writer_up_.end(), [](bool up) { return up; })) {
            health.ready = false;
            health.reason = "PostgreSQL is unreachable: " + writer_error_;
        }
        return health;
    }

    void close() {
        {
            std::lock_guard lock(mutex_);
            if (queue_.closing()) return;
            queue_.close();
        }
        asio::post(io_, [this] {
            finish_if_drained();  // the last batch may have ended before this ran
            if (finished_) return;
            // Writes already accepted get until the time-out to commit; then whatever is still
            // in flight is answered unavailable.
            close_timer_.expires_after(options_.close_timeout);
            close_timer_.async_wait([this](const boost::system::error_code& error) {
                if (!error) finish();
            });
        });
        thread_.stop();
        listener_.reset();
    }

  private:
    // `connection`, set for the pruning statements: the same access paths as the store's
    // (statements.hpp), no notices.
    static Connection for_pruning(Connection connection) {
        ignore_notices(connection.get());
        exec(connection.get(), "SET enable_seqscan = off");
        return connection;
    }

    // Runs `step` on the pruning connection (its own: the migrations' at first, connected again
    // after a failure; one prune at a time).
    template <typename Step>
    std::size_t prune(Step step) {
        std::lock_guard lock(prune_mutex_);
        try {
            if (!pruner_) pruner_ = for_pruning(connect_blocking(options_.conninfo));
            return step(pruner_.get());
        } catch (const std::exception&) {
            pruner_.reset();  // connect again next time (after a failover, to the new primary)
            throw;
        }
    }

    void run() {
        io_.run();
        // Reads posted before closing began run now, against closed connections: each is
        // answered unavailable instead of being dropped.
        io_.restart();
        io_.poll();
    }

    // Takes the next batch: pending writes in arrival order, stopping before the first one
    // whose (tenant, id) is already in this batch or in one still in flight, so that writes to
    // one plant are committed in the order they came. Adds its keys to in_flight_keys_.
    std::vector<Pending> take_batch() {
        std::vector<Pending> batch;
        std::lock_guard lock(mutex_);
        std::deque<Pending>& pending = queue_.writes();
        while (!pending.empty() && batch.size() < options_.writes.max_batch) {
            Pending& next = pending.front();
            if (next.alone && !batch.empty()) break;
            if (!in_flight_keys_.emplace(next.tenant, next.plant.id).second) break;
            batch.push_back(std::move(next));
            pending.pop_front();
            if (batch.back().alone) break;
        }
        return batch;
    }

    void release_keys(const std::vector<Pending>& batch) {
        for (const Pending& pending : batch) {
            in_flight_keys_.erase({pending.tenant, pending.plant.id});
        }
    }

    // Gives every idle, connected writer a batch (several transactions in flight let
    // PostgreSQL flush their commits together); when none is connected, answers what waits.
    void start_batch() {
        for (;;) {
            const bool any_ready =
                std::any_of(writers_.begin(), writers_.end(),
                            [](const Writer& w) { return w.connection->ready(); });
            if (!any_ready) {
                std::vector<Pending> batch = take_batch();
                release_keys(batch);
                if (batch.empty()) break;
                const std::string reason =
                    "PostgreSQL is unreachable: " + writers_.front().connection->last_error();
                for (Pending& pending : batch)
                    pending.done(WriteResult::unavailable_because(reason));
                continue;
            }
            auto idle = std::find_if(writers_.begin(), writers_.end(), [](const Writer& w) {
                return !w.busy && w.connection->ready();
            });
            if (idle == writers_.end()) return;     // a completion starts the next batch
            if (wait_for_a_larger_batch()) return;  // its timer or the next write starts it
            std::vector<Pending> batch = take_batch();
            last_batch_rows_ = batch.size();
            waited_ = false;
            if (batch.empty()) break;
            send_batch(*idle, std::move(batch));
        }
        finish_if_drained();
    }

    // Whether the free writer waits a little for a larger batch (Options::batch_wait): while
    // the last batch held kBusyBatch or more and fewer than it are queued, it waits until as many
    // are queued or batch_wait has passed since it began to wait, whichever comes first; a quiet
    // store, a closing one, or a wait that ran out sends at once.
    bool wait_for_a_larger_batch() {
        static constexpr std::size_t kBusyBatch = 8;
        if (options_.batch_wait.count() <= 0 || waited_ || last_batch_rows_ < kBusyBatch) {
            return false;
        }
        std::size_t queued = 0;
        {
            std::lock_guard lock(mutex_);
            if (queue_.closing()) return false;
            queued = queue_.writes().size();
        }
        if (queued >= last_batch_rows_) {
            if (waiting_) batch_wait_timer_.cancel();
            waiting_ = false;
            return false;
        }
        if (!waiting_) {
            waiting_ = true;
            batch_wait_timer_.expires_after(options_.batch_wait);
            batch_wait_timer_.async_wait([this](const boost::system::error_code& error) {
                if (error) return;  // cancelled: the batch filled up and went
                waiting_ = false;
                waited_ = true;
                start_batch();
            });
        }
        return true;
    }

    void send_batch(Writer& writer, std::vector<Pending> batch) {
        writer.busy = true;
        // Creates, then deletes and updates (one statement each), each in (tenant, id) order:
        // concurrent batches of several instances then take row locks in one order, which
        // avoids most deadlocks between them. A batch never holds two writes to one plant.
        std::vector<std::size_t> creates;
        std::vector<std::size_t> changes;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            switch (batch[i].kind) {  // every kind, no default: a new one must be placed here
                case WriteRequest::Kind::create:
                    creates.push_back(i);
                    break;
                case WriteRequest::Kind::remove:
                case WriteRequest::Kind::update:
                    changes.push_back(i);
                    break;
            }
        }
        const auto by_key = [&batch](std::size_t a, std::size_t b) {
            return std::tie(batch[a].tenant, batch[a].plant.id) <
                   std::tie(batch[b].tenant, batch[b].plant.id);
        };
        std::sort(creates.begin(), creates.end(), by_key);
        std::sort(changes.begin(), changes.end(), by_key);
        std::vector<Statement> statements;
        statements.push_back({{}, "BEGIN", {}});
        // First, the rows of the tenants with a quota (statements.hpp).
        std::set<std::string_view> tenants;
        for (const Pending& pending : batch) tenants.insert(pending.tenant);
        statements.push_back(
            {"lock_tenants",
             {},
             {tenant_array(tenants), std::to_string(options_.writes.max_plants_per_tenant)}});
        const std::int64_t now = common::unix_ms_now();
        if (!creates.empty()) {
            PlantArrays arrays;
            std::string traces = "{";  // each create's request span, for its deliveries
            for (const std::size_t i : creates) {
                const auto& plant = batch[i].plant;
                arrays.add_plant(batch[i].tenant, plant.id, plant.plant.name, plant.plant.tag, now);
                append_array_element(traces, traceparent_of(batch[i]));
            }
            arrays.close();
            traces += '}';
            statements.push_back(
                {"insert_plants",
                 {},
                 {std::move(arrays.tenants), std::move(arrays.ids), std::move(arrays.names),
                  std::move(arrays.tags), std::move(arrays.created_at),
                  std::to_string(options_.writes.max_plants_per_tenant), std::move(traces)}});
        }
        // One statement per delete or update (statements.hpp: a shape with no plan but the key).
        for (const std::size_t i : changes) statements.push_back(change_statement(batch[i]));
        const OutboxLease& outbox = options_.writes.outbox;
        const bool hand_over = !outbox.owner.empty() && options_.writes.observer != nullptr;
        statements.push_back(
            {"append_events",
             {},
             {std::to_string(now),
              hand_over ? std::optional<std::string>(outbox.owner) : std::nullopt,
              hand_over ? std::optional<std::string>(std::to_string(now + outbox.lease_ms))
                        : std::nullopt}});
        const std::size_t events_at = statements.size() - 1;
        statements.push_back({"durability_mark", {}, {}});
        if (++writer.batches % kClearStagedEventsEvery == 0) {
            statements.push_back({{}, kClearStagedEvents, {}});
        }
        statements.push_back({{}, "COMMIT", {}});
        const std::size_t sent = statements.size();
        const auto started = std::chrono::steady_clock::now();
        writer.connection->submit(
            statements, [this, &writer, batch = std::move(batch), creates = std::move(creates),
                         changes = std::move(changes), started, now, sent,
                         events_at](SegmentOutcome outcome) mutable {
                writer.busy = false;
                // A statement that failed leaves the transaction open and aborted (pipeline
                // mode skips the rest, COMMIT included, up to the sync): it is rolled back
                // before anything else runs on the connection, or every later batch on it
                // would fail too (a request whose data failed a batch took the writer down).
                if (!outcome.lost && first_failure(outcome.results, sent)) {
                    writer.connection->submit({{{}, "ROLLBACK", {}}}, [](const SegmentOutcome&) {});
                }
                release_keys(batch);
                complete_batch(batch, creates, changes, std::move(outcome), started, now, sent,
                               events_at);
            });
    }

    // The request span a write carries for its webhook deliveries, or NULL.
    static std::optional<std::string_view> traceparent_of(const Pending& pending) {
        if (pending.traceparent.empty()) return std::nullopt;
        return pending.traceparent;
    }

    static std::optional<std::string> traceparent_text(const Pending& pending) {
        const auto text = traceparent_of(pending);
        return text ? std::optional<std::string>(*text) : std::nullopt;
    }

    // The statement of a delete or an update.
    static Statement change_statement(const Pending& pending) {
        const Precondition& precondition = pending.precondition;
        const char* required = precondition.required ? "true" : "false";
        std::vector<std::optional<std::string>> parameters = {pending.tenant,
                                                              std::to_string(pending.plant.id)};
        switch (pending.kind) {
            case WriteRequest::Kind::remove:
                if (unconditional_delete(pending)) {
                    parameters.push_back(traceparent_text(pending));
                    return {"delete_plant", {}, std::move(parameters)};
                }
                parameters.push_back(if_match_array(precondition.if_match));
                parameters.emplace_back(required);
                parameters.push_back(traceparent_text(pending));
                return {"delete_plant_if", {}, std::move(parameters)};
            case WriteRequest::Kind::update:
                parameters.push_back(pending.change.name);
                parameters.emplace_back(pending.change.sets_tag ? "true" : "false");
                parameters.push_back(pending.change.tag);
                parameters.push_back(if_match_array(precondition.if_match));
                parameters.emplace_back(required);
                parameters.push_back(traceparent_text(pending));
                return {"update_plant", {}, std::move(parameters)};
            case WriteRequest::Kind::create:
                break;
        }
        throw std::logic_error("a create has no change statement");
    }

    void complete_batch(std::vector<Pending>& batch, const std::vector<std::size_t>& creates,
                        const std::vector<std::size_t>& changes, SegmentOutcome outcome,
                        std::chrono::steady_clock::time_point started, std::int64_t now,
                        std::size_t sent, std::size_t events_at) {
        std::string failure;
        std::vector<Pending> again;  // to run in a new transaction
        // BEGIN, the tenants' rows, the inserts, one statement per delete or update, the
        // events (at `events_at`), the durability mark, in one batch of kClearStagedEventsEvery
        // the staged events' truncation, COMMIT: `sent` statements.
        if (outcome.lost) {
            failure =
                "the connection to PostgreSQL was lost before the commit was confirmed "
                "(its outcome is unknown; an identical retry is safe): " +
                outcome.lost_reason;
        } else if (auto error = first_failure(outcome.results, sent)) {
            if (error->retryable()) {
                again = std::move(batch);
                batch.clear();
            } else if (batch.size() > 1 && from_one_rows_data(*error)) {
                // One write's data failed the whole transaction (a value past a limit, a
                // constraint): each runs again alone, so that only its own fails and no
                // tenant's write can fail another's.
                for (Pending& pending : batch) pending.alone = true;
                again = std::move(batch);
                batch.clear();
            } else {
                failure = error->what();
            }
        } else if (std::string_view(PQcmdStatus(outcome.results.back().get())) != "COMMIT") {
            failure = "COMMIT did not commit";
        }
        if (!failure.empty()) {
            for (Pending& pending : batch) pending.done(WriteResult::unavailable_because(failure));
        } else if (!batch.empty()) {
            try {
                tell_appended(outcome.results[events_at].get(), now);
            } catch (const std::exception& error) {  // a malformed answer: nothing promised
                failure = error.what();
                for (Pending& pending : batch)
                    pending.done(WriteResult::unavailable_because(failure));
            }
            if (failure.empty()) {
                share_deliveries(outcome.results[events_at].get(), batch);
                failure = complete_rows(batch, creates, changes, outcome.results, again);
            }
        }
        if (options_.writes.observer != nullptr) {
            store::BatchReport report;
            report.duration = std::chrono::steady_clock::now() - started;
            report.failure = failure;
            for (const Pending& pending : batch) report.carry(pending, started);
            for (const Pending& pending : again) report.carry(pending, started);
            options_.writes.observer->on_batch(report);
        }
        requeue(std::move(again));
        start_batch();
    }

    // Tells the observer of each tenant whose log the committed batch appended to (the rows of
    // append_events of kind 0; other instances learn it from the notification), then hands it
    // the deliveries the batch queued leased to this instance (kind 1).
    void tell_appended(const PGresult* appended, std::int64_t now) {
        if (options_.writes.observer == nullptr) return;
        std::vector<ClaimedDelivery> handed;
        for (int row = 0; row < PQntuples(appended); ++row) {
            if (int64_at(appended, row, 0) == 0) {
                options_.writes.observer->on_events(text_at(appended, row, 1),
                                                    int64_at(appended, row, 2));
                continue;
            }
            handed.push_back(
                claimed_delivery_at(appended, row, 3, now + options_.writes.outbox.lease_ms));
        }
        if (!handed.empty()) options_.writes.observer->on_deliveries(std::move(handed));
    }

    // Tells each change of the committed `batch` how many webhook deliveries it queued
    // (WriteResult::deliveries, which TenantShares weighs): the rows of append_events of kind 1
    // (only with an outbox owner), each tenant's shared among its writes in the batch.
    static void share_deliveries(const PGresult* appended, std::vector<Pending>& batch) {
        std::map<std::string, std::size_t, std::less<>> queued;
        for (int row = 0; row < PQntuples(appended); ++row) {
            if (int64_at(appended, row, 0) == 1) ++queued[std::string(text_at(appended, row, 4))];
        }
        if (queued.empty()) return;
        std::map<std::string_view, std::size_t> writes;
        for (const Pending& pending : batch) ++writes[pending.tenant];
        for (Pending& pending : batch) {
            const auto found = queued.find(pending.tenant);
            if (found == queued.end()) continue;
            const std::size_t each =
                (found->second + writes[pending.tenant] - 1) / writes[pending.tenant];
            pending.done = [each, done = std::move(pending.done)](WriteResult result) {
                if (result.changed()) result.deliveries = each;
                done(std::move(result));
            };
        }
    }

    // Answers each write of a committed batch that its row settles (committed_batch.hpp) and moves
    // those to run again, unanswered, into `again`: every write is answered once, now or after
    // its rerun. Returns why no row could be trusted (each write was then answered
    // unavailable), or "".
    static std::string complete_rows(std::vector<Pending>& batch,
                                     const std::vector<std::size_t>& creates,
                                     const std::vector<std::size_t>& changes,
                                     const std::vector<Result>& results,
                                     std::vector<Pending>& again) {
        std::vector<WriteRequest*> writes;
        writes.reserve(batch.size());
        for (Pending& pending : batch) writes.push_back(&pending);
        // BEGIN, the tenants' rows, then the inserts (when there are creates), then one result
        // per delete or update.
        const std::size_t first_change = creates.empty() ? 2 : 3;
        std::vector<const PGresult*> change_rows;
        change_rows.reserve(changes.size());
        for (std::size_t row = 0; row < changes.size(); ++row) {
            change_rows.push_back(results[first_change + row].get());
        }
        CommittedAnswers answers = answer_committed_rows(
            writes, creates, creates.empty() ? nullptr : results[2].get(), changes, change_rows);
        for (const std::size_t i : answers.rerun) again.push_back(std::move(batch[i]));
        return std::move(answers.failure);
    }

    // Puts writes back at the front of the queue (before anything that arrived after them), or
    // answers them unavailable once they have been tried kMaxAttempts times.
    void requeue(std::vector<Pending> again) {
        std::vector<Pending> exhausted;
        {
            std::lock_guard lock(mutex_);
            for (auto it = again.rbegin(); it != again.rend(); ++it) {
                if (++it->attempts >= kMaxAttempts) {
                    exhausted.push_back(std::move(*it));
                } else {
                    queue_.writes().push_front(std::move(*it));  // ahead of the limit
                }
            }
        }
        for (Pending& pending : exhausted) {
            pending.done(WriteResult::unavailable_because("conflicting concurrent writes; tried " +
                                                          std::to_string(kMaxAttempts) + " times"));
        }
    }

    // Runs `statement` on a reader and answers `done` with what `parse` makes of its rows, or
    // unavailable (no reader connected, the connection lost, the statement failed).
    template <typename Result, typename Parse>
    void submit_read(Statement statement, Parse parse, std::function<void(Result)> done) {
        {
            std::lock_guard lock(mutex_);
            if (!queue_.closing()) {
                asio::post(io_, [this, statement = std::move(statement), parse = std::move(parse),
                                 done = std::move(done)]() mutable {
                    PipelinedConnection* reader = pick_reader();
                    if (reader == nullptr) {
                        done(read_unavailable<Result>("PostgreSQL is unreachable: " +
                                                      readers_.front()->last_error()));
                        return;
                    }
                    std::vector<Statement> statements;
                    statements.push_back(std::move(statement));
                    reader->submit(statements, [parse = std::move(parse),
                                                done = std::move(done)](SegmentOutcome outcome) {
                        if (outcome.lost) {
                            done(read_unavailable<Result>(outcome.lost_reason));
                            return;
                        }
                        const PGresult* result = outcome.results.front().get();
                        if (PQresultStatus(result) != PGRES_TUPLES_OK) {
                            done(read_unavailable<Result>(result_error(result, "SELECT").what()));
                            return;
                        }
                        Result read;
                        try {
                            read = parse(result);
                        } catch (const PgError& error) {
                            read = read_unavailable<Result>(error.what());
                        }
                        done(std::move(read));
                    });
                });
                return;
            }
        }
        done(read_unavailable<Result>("the store is closing"));
    }

    // The ready reader with the fewest reads in flight; while none is connected, a connected
    // writer (every connection prepares every statement), the read then waiting behind its
    // batch.
    PipelinedConnection* pick_reader() {
        PipelinedConnection* best = nullptr;
        for (auto& reader : readers_) {
            if (reader->ready() && (best == nullptr || reader->in_flight() < best->in_flight())) {
                best = reader.get();
            }
        }
        for (auto& writer : writers_) {
            if (best == nullptr && writer.connection->ready()) best = writer.connection.get();
        }
        return best;
    }

    // One connection got through: PostgreSQL is back (on `host`, after a failover the new
    // primary), so the others waiting out a backoff try there now instead of up to 5 s later.
    void reconnect_others(std::size_t host) {
        for (auto& writer : writers_) writer.connection->retry_now(host);
        for (auto& reader : readers_) reader->retry_now(host);
    }

    void finish_if_drained() {
        bool drained = false;
        {
            std::lock_guard lock(mutex_);
            drained = queue_.closing() && queue_.writes().empty() &&
                      std::none_of(writers_.begin(), writers_.end(),
                                   [](const Writer& w) { return w.busy; });
        }
        if (drained) finish();
    }

    // Ends the event loop: connections close (what is in flight is answered unavailable), then
    // whatever is still queued is answered unavailable too.
    void finish() {
        if (finished_) return;
        finished_ = true;
        close_timer_.cancel();
        batch_wait_timer_.cancel();
        for (auto& writer : writers_) writer.connection->shut_down();
        for (auto& reader : readers_) reader->shut_down();
        std::deque<Pending> left;
        {
            std::lock_guard lock(mutex_);
            left.swap(queue_.writes());
        }
        for (Pending& pending : left)
            pending.done(WriteResult::unavailable_because("the store is closing"));
        work_.reset();
    }

    Options options_;
    ConnectTargets targets_;
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    asio::steady_timer close_timer_;
    asio::steady_timer batch_wait_timer_{io_};  // wait_for_a_larger_batch(); event loop only
    bool waiting_ = false;                      // its timer is armed
    bool waited_ = false;                       // it ran out since the last batch was sent
    std::size_t last_batch_rows_ = 0;           // writes in the last batch sent
    std::vector<Writer> writers_;
    /// (tenant, id) of every write in a batch being built or in flight.
    std::set<std::pair<std::string, domain::PlantId>> in_flight_keys_;
    std::vector<std::unique_ptr<PipelinedConnection>> readers_;
    bool finished_ = false;  // event loop only

    mutable std::mutex mutex_;
    std::condition_variable started_;
    WriteQueue<std::deque<Pending>> queue_;  // guarded by mutex_
    bool kick_posted_ = false;               // guarded by mutex_
    std::vector<bool> writer_up_;            // guarded by mutex_
    std::string writer_error_;               // guarded by mutex_
    std::vector<bool> reader_up_;            // guarded by mutex_
    common::BackgroundThread thread_;
    std::mutex prune_mutex_;
    Connection pruner_;                      // guarded by prune_mutex_ once serving
    std::optional<EventListener> listener_;  // when there is an observer
};

PgPlantStore::PgPlantStore(Options options)
    : engine_(std::make_unique<Engine>(std::move(options))) {}

PgPlantStore::~PgPlantStore() = default;

void PgPlantStore::write(WriteRequest request) { engine_->enqueue({std::move(request)}); }

void PgPlantStore::read(std::string tenant, domain::PlantId id, ReadCallback done) {
    engine_->read(std::move(tenant), id, std::move(done));
}

void PgPlantStore::list(std::string tenant, ListQuery query, ReadCallback done) {
    engine_->list(std::move(tenant), query, std::move(done));
}

void PgPlantStore::read_events(std::string tenant, std::int64_t after, int limit,
                               EventReadCallback done) {
    engine_->read_events(std::move(tenant), after, limit, std::move(done));
}

void PgPlantStore::usage(std::string tenant, UsageCallback done) {
    engine_->usage(std::move(tenant), std::move(done));
}

std::size_t PgPlantStore::prune_events(std::int64_t before, std::size_t limit) {
    return engine_->prune_events(before, limit);
}

std::size_t PgPlantStore::prune_event_bytes(std::int64_t max_bytes, std::size_t limit) {
    return engine_->prune_event_bytes(max_bytes, limit);
}

Health PgPlantStore::health() const { return engine_->health(); }

void PgPlantStore::close() { engine_->close(); }

}  // namespace plantstore::store::postgres
