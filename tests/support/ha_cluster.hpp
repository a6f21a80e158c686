// Test support: a throwaway highly available PostgreSQL (scripts/ha-cluster.sh: three etcd
// members and two Patroni-managed PostgreSQL 15 nodes on 127.0.0.x, in a temporary directory,
// never a system service).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace plantstore::testing_support {

/// Whether Patroni, etcd and PostgreSQL 15 are installed (scripts/install-deps.sh --tests
/// installs them); when not, why not.
std::string ha_cluster_unavailable_reason();

class HaCluster {
  public:
    /// Starts it in `directory`, waiting until there is a primary with a synchronous standby.
    /// @throws std::runtime_error naming the logs when it does not come up
    explicit HaCluster(const std::filesystem::path& directory);
    HaCluster(const HaCluster&) = delete;
    HaCluster& operator=(const HaCluster&) = delete;
    ~HaCluster();
    /// The multi-host URL for plantstore (role and database plantstore).
    const std::string& url() const { return url_; }
    /// The node Patroni says is primary ("node1" or "node2"), or "" while there is none.
    std::string primary() const;
    /// Waits (at most `limit`) until Patroni names `node` primary; false if it does not.
    bool becomes_primary(const std::string& node, std::chrono::seconds limit) const;
    /// The other node of the two.
    static std::string other_node(const std::string& node) {
        return node == "node1" ? "node2" : "node1";
    }
    /// The node Patroni names synchronous standby, or "" while there is none.
    std::string sync_standby() const;
    /// A superuser connection string to `node` alone.
    std::string node_url(const std::string& node) const;
    /// SIGKILL of the node's Patroni and postmaster.
    void kill(const std::string& node);
    /// SIGSTOP of the node's Patroni and every PostgreSQL process.
    void freeze(const std::string& node);
    /// SIGCONT of one half ("postgres" or "patroni") of a frozen node.
    void thaw(const std::string& node, const std::string& part);
    /// Starts the node's Patroni again (after kill()): it rejoins as a replica.
    void restart(const std::string& node);

  private:
    std::string run(const std::string& arguments) const;

    std::filesystem::path directory_;
    std::string url_;
};

}  // namespace plantstore::testing_support
