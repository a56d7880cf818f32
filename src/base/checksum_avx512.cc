// The AVX-512 build of the checksum loop (compiled with -mavx512f; called
// only when the CPU has AVX-512F, see checksum.cc).
#define MEMKV_CHECKSUM_IOV ChecksumIovAvx512
#define MEMKV_CHECKSUM_UPDATE ChecksumUpdateAvx512
#include "base/checksum_vector.inc"
