// Where ranks run and what they set up before CUDA starts (MPS shares, hardware queues, one
// node), on the CPU against a stand-in for /proc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "fusioncheck/gpu/rank_placement.hpp"

namespace {

namespace fg = fusioncheck::gpu;

// MPS is "running" only while a daemon process is: its pipe file outlives `quit`.
TEST(MpsDetection, NeedsADaemonProcess) {
  const auto proc =
      std::filesystem::temp_directory_path() / ("fc_fake_proc_" + std::to_string(::getpid()));
  std::filesystem::remove_all(proc);
  auto add = [&](const std::string& pid, const std::string& comm) {
    std::filesystem::create_directories(proc / pid);
    std::ofstream(proc / pid / "comm") << comm << "\n";
  };
  add("1", "init");
  add("200", "fusioncheck");
  EXPECT_FALSE(fg::mps_daemon_running(proc));
  add("300", "nvidia-cuda-mps");
  EXPECT_TRUE(fg::mps_daemon_running(proc));
  std::filesystem::remove_all(proc);
  EXPECT_FALSE(fg::mps_daemon_running(proc));  // no such directory: not running
}

// A stand-in for /proc with one GPU under driver/nvidia/gpus, made afresh.
std::filesystem::path fake_proc_with_one_gpu(const std::string& tag) {
  const auto proc = std::filesystem::temp_directory_path() /
                    ("fc_fake_proc_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(proc);
  std::filesystem::create_directories(proc / "driver/nvidia/gpus/0000:01:00.0");
  return proc;
}

// Ranks sharing a GPU under MPS get an equal share of the SMs before CUDA starts (kernels
// whose grids come from the SM count); a value the user set, one rank per GPU or no MPS
// daemon leave the environment alone.
TEST(MpsShare, EqualSharesOnlyWhereRanksShareAGpuUnderMps) {
  const auto proc = fake_proc_with_one_gpu("share");
  std::filesystem::create_directories(proc / "1");
  std::ofstream(proc / "1" / "comm") << "init\n";
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  EXPECT_EQ(fg::share_sms_before_cuda(proc), 0);  // no MPS daemon: time-sliced, nothing to share
  EXPECT_EQ(std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), nullptr);
  std::filesystem::create_directories(proc / "300");
  std::ofstream(proc / "300" / "comm") << "nvidia-cuda-mps\n";
  EXPECT_EQ(fg::share_sms_before_cuda(proc), 50);
  EXPECT_STREQ(std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
  EXPECT_EQ(fg::share_sms_before_cuda(proc), 0);  // now set: kept as it is
  unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  EXPECT_EQ(fg::share_sms_before_cuda(proc), 25);
  unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3", 1);  // one rank per GPU
  EXPECT_EQ(fg::share_sms_before_cuda(proc), 0);
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_EQ(fg::share_sms_before_cuda(proc), 0);  // not under a launcher
  std::filesystem::remove_all(proc);
}

// 96 hardware queues per GPU shared by its ranks, at most 32 each; where that leaves the
// runtime's 8 or fewer, or the user set a value, the environment stays as it is.
TEST(HardwareQueues, NinetySixPerGpuSharedByItsRanks) {
  const auto proc = fake_proc_with_one_gpu("queues");
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_EQ(fg::hardware_queues_before_cuda(proc), 32);  // one process, no launcher
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "32");
  EXPECT_EQ(fg::hardware_queues_before_cuda(proc), 0);  // now set: kept as it is
  for (const auto& [ranks, queues] : std::vector<std::pair<int, const char*>>{
           {2, "32"}, {3, "32"}, {4, "24"}, {6, "16"}, {7, "13"}, {8, "12"}}) {
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(ranks).c_str(), 1);
    EXPECT_EQ(fg::hardware_queues_before_cuda(proc), std::atoi(queues)) << ranks << " ranks";
    EXPECT_STREQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), queues) << ranks << " ranks";
  }
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "12", 1);
  EXPECT_EQ(fg::hardware_queues_before_cuda(proc), 0);  // 8 each: the runtime's default
  EXPECT_EQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), nullptr);
  setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);  // six ranks per GPU
  EXPECT_EQ(fg::hardware_queues_before_cuda(proc), 16);
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  std::filesystem::remove_all(proc);
}

// A job across nodes is refused with the nodes named and why; one node (or one rank) is not.
TEST(RankPlacement, RanksOnSeveralNodesAreRefusedWithTheNodesNamed) {
  EXPECT_EQ(fg::multi_node_problem({"gpu-a", "gpu-a", "gpu-a", "gpu-a"}), "");
  EXPECT_EQ(fg::multi_node_problem({"gpu-a"}), "");
  const std::string why = fg::multi_node_problem({"gpu-a", "gpu-b", "gpu-a", "gpu-b", "gpu-c"});
  EXPECT_NE(why.find("the ranks are on 3 nodes: gpu-a (2 ranks), gpu-b (2 ranks), gpu-c (1 rank)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("CUDA IPC, which ends at the node"), std::string::npos) << why;
  EXPECT_NE(why.find("HOSTFILE"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << "one line";
}

}  // namespace
