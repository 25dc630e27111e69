#!/bin/sh
# Builds tests/oracles/kata_rawnn (the KataGo evaluator driver of tests/helpers/kata_oracle.py) against a
# KataGo source tree whose Eigen build has compiled at least core/, game/, neuralnet/, dataio/:
#   git clone https://github.com/lightvector/KataGo /work/katago   (outside this repository)
#   cd /work/katago/cpp && mkdir build && cd build
#   cmake .. -DUSE_BACKEND=EIGEN -DUSE_AVX2=1 -DNO_GIT_REVISION=1 && nice -n 19 make -j1
#   sh tests/oracles/build_kata_rawnn.sh /work/katago/cpp /work/katago/oracle/rawnn
# (the driver links only those objects, so a partial build is enough).
set -e
SRC=${1:?KataGo cpp directory}
OUT=${2:?output binary}
HERE=$(cd "$(dirname "$0")" && pwd)
O=$SRC/build/CMakeFiles/katago.dir
F="-DNO_GIT_REVISION -DUSE_AVX2 -DUSE_EIGEN_BACKEND -I$SRC/external -I$SRC/build -isystem $SRC/external/tclap-1.2.5/include -isystem $SRC/external/filesystem-1.5.8/include -isystem /usr/include/eigen3 -mfpmath=sse -mavx2 -mfma -O3 -DNDEBUG -std=gnu++17"
TMP=$(mktemp -d)
mkdir -p "$TMP/oracle"
cp "$HERE/kata_rawnn.cpp" "$TMP/oracle/rawnn.cpp"
ln -s "$SRC" "$TMP/cpp"
cat > "$TMP/oracle/stub.cpp" <<'STUB'
#include "../cpp/program/playutils.h"
void PlayUtils::placeFixedHandicap(Board&, int) { throw StringError("not in the oracle"); }
STUB
# rawnn.cpp includes "../core/..." etc.: compile it from inside the KataGo cpp tree's layout
sed 's|#include "\.\./|#include "'"$SRC"'/|' "$TMP/oracle/rawnn.cpp" > "$TMP/oracle/rawnn2.cpp"
g++ $F -c "$TMP/oracle/rawnn2.cpp" -o "$TMP/rawnn.o"
g++ $F -c "$SRC/search/mutexpool.cpp" -o "$TMP/mutexpool.o"
g++ $F -c "$TMP/oracle/stub.cpp" -o "$TMP/stub.o"
g++ -O3 -o "$OUT" "$TMP/rawnn.o" "$TMP/mutexpool.o" "$TMP/stub.o" "$O"/core/*.o "$O"/game/*.o \
    "$O"/neuralnet/*.o "$O"/dataio/*.o -lzip -lz -lpthread
rm -rf "$TMP"
echo "built $OUT"
