// Finding the programs the benchmark runs beside memkv (redis-server for
// --fill and --peer redis, gnuplot for --plot), and installing them with
// apt-get when the user asked for that (--install-peers).
//
// Free functions, called from main's thread before any cell runs.
#ifndef MEMKV_BENCH_PEERS_H_
#define MEMKV_BENCH_PEERS_H_

#include <string>

namespace memkv::bench {

// A program the bench may need and where it comes from.
struct PeerProgram {
  std::string name;     // "redis-server": looked up on PATH
  std::string package;  // "redis-server": the Debian package that has it
  std::string flag;     // "--redis": the flag that names it directly; empty when there is none
};

inline const PeerProgram kRedisProgram{"redis-server", "redis-server", "--redis"};
inline const PeerProgram kGnuplotProgram{"gnuplot", "gnuplot-nox", ""};

// "apt-get install -y <package>".
std::string InstallCommand(const PeerProgram& program);

// The program to run: `given` (its flag's value) when set and executable;
// else the first on `path_env`; else, when `install` is true, the one
// `InstallCommand` puts there. "" when there is none, with *why naming the
// package, the command and the flags that would help.
std::string FindPeer(const PeerProgram& program, const std::string& given, bool install,
                     const std::string& path_env, std::string* why);

}  // namespace memkv::bench

#endif  // MEMKV_BENCH_PEERS_H_
