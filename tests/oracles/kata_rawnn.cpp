// Test oracle for tests/helpers/kata_oracle.py: KataGo's own featurization (NNInputs::fillRowV7), Eigen
// network and NNEvaluator post-processing, driven over stdin.  Links against an Eigen build of
// KataGo's public source (see build_kata_rawnn.sh); it is not part of the engine.
// usage: rawnn MODEL [THREADS [MAX_BOARD_SIZE]]
// stdin lines:
//   new SIZE KOMI KORULE(simple|positional) SUICIDE(0|1) [SCORING(area|territory) TAX(none|seki|all)]
//   play b|w X Y          (x = column from left, y = row from top; "play b pass")
//   tomove b|w            (evaluate for that colour; KataGo clears history if it is not the natural one)
//   eval                  -> one JSON line: win loss noresult lead score policy[] pass own[] (White's view,
//                            what kata-raw-nn prints for symmetry 0; illegal points have policy -1)
//   features              -> one JSON line: spatial[22*N*N] global[19] as fillRowV7 writes them
//   bench SECONDS         -> one JSON line: evaluations done by THREADS concurrent clients
//   quit
#include "../core/global.h"
#include "../core/config_parser.h"
#include "../core/logger.h"
#include "../game/board.h"
#include "../game/boardhistory.h"
#include "../neuralnet/nneval.h"
#include "../neuralnet/nninputs.h"
#include "../neuralnet/nninterface.h"
#include <iostream>
#include <atomic>
#include <chrono>
#include <thread>
#include <sstream>
using namespace std;

int main(int argc, char** argv) {
  if(argc < 2) { cerr << "usage: rawnn MODEL [threads]" << endl; return 1; }
  Board::initHash();
  ScoreValue::initTables();
  NeuralNet::globalInitialize();
  map<string,string> kv;
  kv["numEigenThreadsPerModel"] = "1";
  ConfigParser cfg(kv);
  Logger logger(&cfg, false, true, false, false);
  int threads = argc >= 3 ? atoi(argv[2]) : 1;
  int maxBoard = argc >= 4 ? atoi(argv[3]) : 19;   // KataGo's maxBoardSizeForNNBuffer
  vector<int> gpus(threads, -1);
  NNEvaluator* nnEval = new NNEvaluator(
    "m", argv[1], "", &logger, 2, maxBoard, maxBoard, false, true, 10, 4, false, "", enabled_t::False, threads, gpus,
    "seed", false, 0, true, cfg);
  nnEval->spawnServerThreads();
  int size = 19; float komi = 7.5f; int koRule = Rules::KO_SIMPLE; bool suicide = false;
  Rules rules(koRule, Rules::SCORING_AREA, Rules::TAX_NONE, suicide, false, Rules::WHB_ZERO, false, komi);
  Board board(size, size);
  BoardHistory hist(board, P_BLACK, rules, 0, false);
  Player toMove = P_BLACK;
  string line;
  while(getline(cin, line)) {
    istringstream in(line);
    string cmd; in >> cmd;
    if(cmd == "quit") break;
    if(cmd == "new") {
      string ko, scoring = "area", tax = "none"; int s; in >> size >> komi >> ko >> s >> scoring >> tax;
      koRule = ko == "positional" ? Rules::KO_POSITIONAL : Rules::KO_SIMPLE;
      suicide = s != 0;
      int scoringRule = scoring == "territory" ? Rules::SCORING_TERRITORY : Rules::SCORING_AREA;
      int taxRule = tax == "seki" ? Rules::TAX_SEKI : tax == "all" ? Rules::TAX_ALL : Rules::TAX_NONE;
      rules = Rules(koRule, scoringRule, taxRule, suicide, false, Rules::WHB_ZERO, false, komi);
      board = Board(size, size);
      hist = BoardHistory(board, P_BLACK, rules, 0, false);
      toMove = P_BLACK;
      cout << "ok" << endl;
    } else if(cmd == "play") {
      string c, xs; in >> c >> xs;
      Player pla = (c == "b" || c == "B") ? P_BLACK : P_WHITE;
      Loc loc;
      if(xs == "pass") loc = Board::PASS_LOC;
      else { int y; in >> y; loc = Location::getLoc(stoi(xs), y, size); }
      if(!hist.isLegal(board, loc, pla)) { cout << "illegal" << endl; continue; }
      hist.makeBoardMoveAssumeLegal(board, loc, pla, NULL);
      toMove = getOpp(pla);
      cout << "ok" << endl;
    } else if(cmd == "tomove") {
      string c; in >> c; toMove = (c == "b" || c == "B") ? P_BLACK : P_WHITE;
      cout << "ok" << endl;
    } else if(cmd == "eval") {
      Board b = board; BoardHistory h = hist;
      if(toMove != h.presumedNextMovePla) { b.clearSimpleKoLoc(); h.clear(b, toMove, h.rules, h.encorePhase); }
      MiscNNInputParams p; p.symmetry = 0;
      NNResultBuf buf;
      nnEval->evaluate(b, h, toMove, p, buf, true, true);
      NNOutput* o = buf.result.get();
      ostringstream out;
      out.precision(9);
      out << "{\"win\":" << o->whiteWinProb << ",\"loss\":" << o->whiteLossProb << ",\"noresult\":" << o->whiteNoResultProb
          << ",\"lead\":" << o->whiteLead << ",\"score\":" << o->whiteScoreMean << ",\"policy\":[";
      for(int y = 0; y < size; y++) for(int x = 0; x < size; x++) {
        int pos = NNPos::xyToPos(x, y, o->nnXLen);
        out << (x||y ? "," : "") << o->policyProbs[pos];
      }
      out << "],\"pass\":" << o->policyProbs[NNPos::locToPos(Board::PASS_LOC, size, o->nnXLen, o->nnYLen)] << ",\"own\":[";
      for(int y = 0; y < size; y++) for(int x = 0; x < size; x++) {
        int pos = NNPos::xyToPos(x, y, o->nnXLen);
        out << (x||y ? "," : "") << o->whiteOwnerMap[pos];
      }
      out << "]}";
      cout << out.str() << endl;
    } else if(cmd == "bench") {
      // evals/s of `threads` clients evaluating the current position (KataGo's search with that many
      // search threads keeps as many evaluations in flight, one server thread each, Eigen batch <= 2)
      double seconds; in >> seconds;
      Board b = board; BoardHistory h = hist;
      if(toMove != h.presumedNextMovePla) { b.clearSimpleKoLoc(); h.clear(b, toMove, h.rules, h.encorePhase); }
      std::atomic<long> count(0);
      auto start = std::chrono::steady_clock::now();
      auto work = [&]() {
        MiscNNInputParams p; p.symmetry = 0;
        while(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
          NNResultBuf buf;
          nnEval->evaluate(b, h, toMove, p, buf, true, true);
          count++;
        }
      };
      vector<std::thread> ts;
      for(int i = 0; i < threads; i++) ts.emplace_back(work);
      for(auto& t : ts) t.join();
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      cout << "{\"evals\":" << count.load() << ",\"seconds\":" << el << "}" << endl;
    } else if(cmd == "features") {
      Board b = board; BoardHistory h = hist;
      if(toMove != h.presumedNextMovePla) { b.clearSimpleKoLoc(); h.clear(b, toMove, h.rules, h.encorePhase); }
      MiscNNInputParams p;
      vector<float> bin(NNInputs::NUM_FEATURES_SPATIAL_V7 * size * size), glob(NNInputs::NUM_FEATURES_GLOBAL_V7);
      NNInputs::fillRowV7(b, h, toMove, p, size, size, false, bin.data(), glob.data());
      ostringstream out;
      out << "{\"spatial\":[";
      for(size_t i = 0; i < bin.size(); i++) out << (i ? "," : "") << bin[i];
      out << "],\"global\":[";
      for(size_t i = 0; i < glob.size(); i++) out << (i ? "," : "") << glob[i];
      out << "]}";
      cout << out.str() << endl;
    } else {
      cout << "unknown" << endl;
    }
  }
  delete nnEval;
  NeuralNet::globalCleanup();
  return 0;
}
