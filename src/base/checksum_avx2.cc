// The AVX2 build of the checksum loop (compiled with -mavx2; called only when
// the CPU has AVX2, see checksum.cc).
#define MEMKV_CHECKSUM_IOV ChecksumIovAvx2
#define MEMKV_CHECKSUM_UPDATE ChecksumUpdateAvx2
#include "base/checksum_vector.inc"
