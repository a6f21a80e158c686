// Test support: where this build's parts are (the plantstore binary, the fault-injection
// library, the source tree, the cluster scripts), as absolute paths. They are compiled into one
// small unit, support/build_paths.cpp, and nowhere else: a path in a compile command makes every
// unit it is in a cache miss in a clone at another path (ccache rewrites include paths under
// its base directory, not the text of a -D), and the test units that needed them are the
// largest there are.
#pragma once

namespace plantstore::testing_support {

const char* plantstore_binary();  ///< this build's plantstore
const char* fault_vfs_library();  ///< the SQLite fault-injection shim (LD_PRELOAD)
const char* source_dir();         ///< the source tree (docs/, deploy/, scripts/)
const char* pg_cluster_script();  ///< scripts/pg-cluster.sh
const char* ha_cluster_script();  ///< scripts/ha-cluster.sh

}  // namespace plantstore::testing_support
