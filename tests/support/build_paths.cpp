#include "support/build_paths.hpp"

#if !defined(PLANTSTORE_BINARY) || !defined(PLANTSTORE_FAULT_VFS_LIBRARY) || \
    !defined(PLANTSTORE_SOURCE_DIR)
#error "tests/CMakeLists.txt defines the build's paths for this unit"
#endif

namespace plantstore::testing_support {

const char* plantstore_binary() { return PLANTSTORE_BINARY; }
const char* fault_vfs_library() { return PLANTSTORE_FAULT_VFS_LIBRARY; }
const char* source_dir() { return PLANTSTORE_SOURCE_DIR; }
const char* pg_cluster_script() { return PLANTSTORE_SOURCE_DIR "/scripts/pg-cluster.sh"; }
const char* ha_cluster_script() { return PLANTSTORE_SOURCE_DIR "/scripts/ha-cluster.sh"; }

}  // namespace plantstore::testing_support
