#!/usr/bin/python3
"""Writes the amdgpu sysfs fixture trees tests/testdata/sysfs/{mi300x,rx7900}/.

Each tree is a fake /sys root built from the kernel's documented ABI (amdgpu_pm.c, hwmon
sysfs-interface, kgd_pp_interface.h, kfd_topology.c): class/drm/card0 is a relative symlink into
devices/pci.../<BDF>/drm/card0 as on a real machine, device/ holds the amdgpu attributes, its
hwmon/hwmon0 the sensors, gpu_metrics the binary table (v1.5 for the MI300X, v1.3 for the RX 7900,
laid out here with ctypes from the kernel's structs), and class/kfd plus module/amdgpu are what
Debian's rocm-smi 5.2 needs to accept the tree.

    make_fixtures.py           rewrite the trees next to this script
    make_fixtures.py --check   build them in a temporary directory and fail on any difference
    make_fixtures.py --out D   write them under D

The C++ tests (tests/gpu/amdgpu_test.cc) expect the values written here; change both together.
"""
import ctypes
import filecmp
import os
import shutil
import sys
import tempfile

U8, U16, U32, U64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64
HEADER = [("structure_size", U16), ("format_revision", U8), ("content_revision", U8)]


class GpuMetricsV13(ctypes.LittleEndianStructure):  # struct gpu_metrics_v1_3
    _fields_ = HEADER + [
        ("temperature_edge", U16), ("temperature_hotspot", U16), ("temperature_mem", U16),
        ("temperature_vrgfx", U16), ("temperature_vrsoc", U16), ("temperature_vrmem", U16),
        ("average_gfx_activity", U16), ("average_umc_activity", U16),
        ("average_mm_activity", U16), ("average_socket_power", U16),
        ("energy_accumulator", U64), ("system_clock_counter", U64),
        ("average_gfxclk_frequency", U16), ("average_socclk_frequency", U16),
        ("average_uclk_frequency", U16), ("average_vclk0_frequency", U16),
        ("average_dclk0_frequency", U16), ("average_vclk1_frequency", U16),
        ("average_dclk1_frequency", U16),
        ("current_gfxclk", U16), ("current_socclk", U16), ("current_uclk", U16),
        ("current_vclk0", U16), ("current_dclk0", U16), ("current_vclk1", U16),
        ("current_dclk1", U16),
        ("throttle_status", U32), ("current_fan_speed", U16), ("pcie_link_width", U16),
        ("pcie_link_speed", U16), ("padding", U16), ("gfx_activity_acc", U32),
        ("mem_activity_acc", U32), ("temperature_hbm", U16 * 4), ("firmware_timestamp", U64),
        ("voltage_soc", U16), ("voltage_gfx", U16), ("voltage_mem", U16), ("padding1", U16),
        ("indep_throttle_status", U64),
    ]


class GpuMetricsV15(ctypes.LittleEndianStructure):  # struct gpu_metrics_v1_5
    _fields_ = HEADER + [
        ("temperature_hotspot", U16), ("temperature_mem", U16), ("temperature_vrsoc", U16),
        ("curr_socket_power", U16), ("average_gfx_activity", U16),
        ("average_umc_activity", U16), ("vcn_activity", U16 * 4), ("jpeg_activity", U16 * 32),
        ("energy_accumulator", U64), ("system_clock_counter", U64), ("throttle_status", U32),
        ("gfxclk_lock_status", U32), ("pcie_link_width", U16), ("pcie_link_speed", U16),
        ("xgmi_link_width", U16), ("xgmi_link_speed", U16), ("gfx_activity_acc", U32),
        ("mem_activity_acc", U32), ("pcie_bandwidth_acc", U64), ("pcie_bandwidth_inst", U64),
        ("pcie_l0_to_recov_count_acc", U64), ("pcie_replay_count_acc", U64),
        ("pcie_replay_rover_count_acc", U64), ("pcie_nak_sent_count_acc", U32),
        ("pcie_nak_rcvd_count_acc", U32), ("xgmi_read_data_acc", U64 * 8),
        ("xgmi_write_data_acc", U64 * 8), ("firmware_timestamp", U64),
        ("current_gfxclk", U16 * 8), ("current_socclk", U16 * 4), ("current_vclk0", U16 * 4),
        ("current_dclk0", U16 * 4), ("current_uclk", U16), ("padding", U16),
    ]


assert ctypes.sizeof(GpuMetricsV13) == 120 and ctypes.sizeof(GpuMetricsV15) == 360


def metrics(cls, frev, crev, values):
    """The table as the kernel builds it: all 0xFF, the header, then the firmware's values."""
    m = cls.from_buffer_copy(b"\xff" * ctypes.sizeof(cls))
    m.structure_size, m.format_revision, m.content_revision = ctypes.sizeof(cls), frev, crev
    for name, value in values.items():
        field = getattr(m, name)
        if isinstance(field, ctypes.Array):
            for i, v in enumerate(value):
                field[i] = v
        else:
            setattr(m, name, value)
    return bytes(m)


# One entry per device: what the tests read back. Units as in sysfs (µW, m°C, Hz, bytes).
DEVICES = {
    "mi300x": {
        "pci_path": "pci0000:c0/0000:c0:01.1/0000:c1:00.0",
        "bus": 0xC1,
        "device": 0x74A1, "subsystem_vendor": 0x1002, "subsystem_device": 0x74A1,
        "revision": 0x00, "unique_id": "a3d4c2b1e5f60718",
        "product_name": "AMD Instinct MI300X OAM", "vbios": "113-M3000100-102",
        "attrs": {
            "gpu_busy_percent": 87, "mem_busy_percent": 41,
            "mem_info_vram_total": 205822885888, "mem_info_vram_used": 73014444032,
            "mem_info_vis_vram_total": 205822885888, "mem_info_vis_vram_used": 73014444032,
            "mem_info_gtt_total": 1081592717312, "mem_info_gtt_used": 11563008,
            "pcie_replay_count": 0,
            "pp_dpm_sclk": "0: 500Mhz \n1: 1400Mhz *\n2: 2100Mhz \n",
            "pp_dpm_mclk": "0: 900Mhz \n1: 1100Mhz \n2: 1200Mhz \n3: 1300Mhz *\n",
            "mem_info_vram_vendor": "hynix",
        },
        # smu_v13_0_6: no edge sensor, power1_input (current socket power) only, no fan.
        "hwmon": {
            "temp2_label": "junction", "temp2_input": 62000, "temp2_crit": 100000,
            "temp3_label": "mem", "temp3_input": 55000, "temp3_crit": 105000,
            "power1_input": 548000000, "power1_cap": 750000000, "power1_cap_max": 750000000,
            "power1_cap_min": 0, "power1_cap_default": 750000000, "power1_label": "PPT",
            "freq1_label": "sclk", "freq1_input": 1400000000,
            "freq2_label": "mclk", "freq2_input": 1300000000,
            "in0_label": "vddgfx", "in0_input": 825,
        },
        "metrics": metrics(GpuMetricsV15, 1, 5, {
            "temperature_hotspot": 62, "temperature_mem": 55, "temperature_vrsoc": 48,
            "curr_socket_power": 548, "average_gfx_activity": 87, "average_umc_activity": 41,
            "vcn_activity": [0, 0, 0, 0], "energy_accumulator": 123456789012,
            "system_clock_counter": 86400000000000, "throttle_status": 0,
            "gfxclk_lock_status": 0, "pcie_link_width": 16, "pcie_link_speed": 320,
            "xgmi_link_width": 16, "xgmi_link_speed": 32,
            "current_gfxclk": [1400] * 8, "current_socclk": [1143] * 4,
            "current_vclk0": [29] * 4, "current_dclk0": [22] * 4, "current_uclk": 1300,
        }),
        "kfd": {"simd_count": 1216, "gfx_target_version": 90402, "array_count": 32,
                "cu_per_simd_array": 10, "max_engine_clk_fcompute": 2100, "num_xcc": 8},
        "kfd_name": "ip discovery",
    },
    "rx7900": {
        "pci_path": "pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0",
        "bus": 0x03,
        "device": 0x744C, "subsystem_vendor": 0x1002, "subsystem_device": 0x0E3B,
        "revision": 0xC8, "unique_id": "5a1b2c3d4e5f6071",
        "product_name": None, "vbios": "113-D7020100-102",
        "attrs": {
            "gpu_busy_percent": 23, "mem_busy_percent": 7,
            "mem_info_vram_total": 25753026560, "mem_info_vram_used": 3221225472,
            "mem_info_vis_vram_total": 25753026560, "mem_info_vis_vram_used": 3221225472,
            "mem_info_gtt_total": 33554432000, "mem_info_gtt_used": 46223360,
            "pcie_replay_count": 2,
            "pp_dpm_sclk": "0: 500Mhz \n1: 1880Mhz *\n2: 2500Mhz \n",
            "pp_dpm_mclk": "0: 96Mhz \n1: 456Mhz \n2: 772Mhz \n3: 1249Mhz *\n",
            "mem_info_vram_vendor": "samsung",
        },
        # smu_v13_0_0: edge/junction/mem, power1_average only, a fan.
        "hwmon": {
            "temp1_label": "edge", "temp1_input": 51000, "temp1_crit": 100000,
            "temp2_label": "junction", "temp2_input": 63000, "temp2_crit": 110000,
            "temp3_label": "mem", "temp3_input": 70000, "temp3_crit": 100000,
            "power1_average": 187000000, "power1_cap": 327000000, "power1_cap_max": 402000000,
            "power1_cap_min": 0, "power1_cap_default": 327000000, "power1_label": "PPT",
            "freq1_label": "sclk", "freq1_input": 1880000000,
            "freq2_label": "mclk", "freq2_input": 1249000000,
            "pwm1": 102, "pwm1_enable": 2, "pwm1_min": 0, "pwm1_max": 255,
            "fan1_input": 1260, "fan1_min": 0, "fan1_max": 3300,
            "in0_label": "vddgfx", "in0_input": 862,
        },
        "metrics": metrics(GpuMetricsV13, 1, 3, {
            "temperature_edge": 51, "temperature_hotspot": 63, "temperature_mem": 70,
            "temperature_vrgfx": 45, "temperature_vrsoc": 44, "temperature_vrmem": 46,
            "average_gfx_activity": 23, "average_umc_activity": 7, "average_mm_activity": 0,
            "average_socket_power": 187, "energy_accumulator": 987654321,
            "system_clock_counter": 3600000000000, "average_gfxclk_frequency": 1880,
            "average_socclk_frequency": 960, "average_uclk_frequency": 1249,
            "current_gfxclk": 1880, "current_socclk": 960, "current_uclk": 1249,
            "throttle_status": 0, "current_fan_speed": 1260, "pcie_link_width": 16,
            "pcie_link_speed": 160, "gfx_activity_acc": 1234567, "mem_activity_acc": 765432,
            "voltage_soc": 900, "voltage_gfx": 862, "voltage_mem": 1350,
            "indep_throttle_status": 0,
        }),
        "kfd": {"simd_count": 192, "gfx_target_version": 110000, "array_count": 12,
                "cu_per_simd_array": 8, "max_engine_clk_fcompute": 2500, "num_xcc": 1},
        "kfd_name": "gfx1100",
    },
}

DRIVER_VERSION = "6.7.0"  # /sys/module/amdgpu/version (DKMS builds have one)


def write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = content if isinstance(content, bytes) else (str(content) + "\n").encode()
    if isinstance(content, str) and content.endswith("\n"):
        data = content.encode()
    with open(path, "wb") as f:
        f.write(data)


def link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def kfd_properties(d, gpu):
    """A KFD topology node's properties file (kfd_topology.c's node_show order)."""
    if not gpu:
        rows = [("cpu_cores_count", 16), ("simd_count", 0), ("mem_banks_count", 1),
                ("caches_count", 0), ("io_links_count", 1), ("p2p_links_count", 0),
                ("cpu_core_id_base", 0), ("simd_id_base", 0), ("max_waves_per_simd", 0),
                ("lds_size_in_kb", 0), ("gds_size_in_kb", 0), ("num_gws", 0),
                ("wave_front_size", 0), ("array_count", 0), ("simd_arrays_per_engine", 0),
                ("cu_per_simd_array", 0), ("simd_per_cu", 0), ("max_slots_scratch_cu", 0),
                ("gfx_target_version", 0), ("vendor_id", 0), ("device_id", 0),
                ("location_id", 0), ("domain", 0), ("drm_render_minor", 0), ("hive_id", 0),
                ("num_sdma_engines", 0), ("num_sdma_xgmi_engines", 0),
                ("num_sdma_queues_per_engine", 0), ("num_cp_queues", 0),
                ("max_engine_clk_ccompute", 3000)]
    else:
        k = d["kfd"]
        rows = [("cpu_cores_count", 0), ("simd_count", k["simd_count"]), ("mem_banks_count", 1),
                ("caches_count", 0), ("io_links_count", 1), ("p2p_links_count", 0),
                ("cpu_core_id_base", 0), ("simd_id_base", 2147487744),
                ("max_waves_per_simd", 8), ("lds_size_in_kb", 64), ("gds_size_in_kb", 0),
                ("num_gws", 64), ("wave_front_size", 64 if k["gfx_target_version"] < 100000
                                  else 32),
                ("array_count", k["array_count"]), ("simd_arrays_per_engine", 1),
                ("cu_per_simd_array", k["cu_per_simd_array"]), ("simd_per_cu", 4),
                ("max_slots_scratch_cu", 32), ("gfx_target_version", k["gfx_target_version"]),
                ("vendor_id", 0x1002), ("device_id", d["device"]),
                ("location_id", d["bus"] << 8), ("domain", 0), ("drm_render_minor", 128),
                ("hive_id", 0), ("num_sdma_engines", 2), ("num_sdma_xgmi_engines", 0),
                ("num_sdma_queues_per_engine", 8), ("num_cp_queues", 24),
                ("max_engine_clk_fcompute", k["max_engine_clk_fcompute"]),
                ("local_mem_size", 0), ("fw_version", 151), ("capability", 746710656),
                ("debug_prop", 1495), ("sdma_fw_version", 19),
                ("unique_id", int(d["unique_id"], 16)), ("num_xcc", k["num_xcc"]),
                ("max_engine_clk_ccompute", 3000)]
    return "".join(f"{name} {value}\n" for name, value in rows)


def build_tree(root, d, card=0):
    """GPU `d` as DRM card `card` (hwmon`card`, renderD`128+card`, KFD node `card+1`)."""
    bdf = d["pci_path"].rsplit("/", 1)[1]
    render = f"renderD{128 + card}"
    dev = os.path.join(root, "devices", d["pci_path"])
    # The PCI device: identity, the amdgpu attributes, the driver link, DRM minors, hwmon.
    write(f"{dev}/vendor", "0x1002")
    write(f"{dev}/device", f"0x{d['device']:04x}")
    write(f"{dev}/subsystem_vendor", f"0x{d['subsystem_vendor']:04x}")
    write(f"{dev}/subsystem_device", f"0x{d['subsystem_device']:04x}")
    write(f"{dev}/revision", f"0x{d['revision']:02x}")
    write(f"{dev}/class", "0x038000")
    write(f"{dev}/uevent", f"DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID=1002:{d['device']:04X}\n"
          f"PCI_SUBSYS_ID={d['subsystem_vendor']:04X}:{d['subsystem_device']:04X}\n"
          f"PCI_SLOT_NAME={bdf}\nMODALIAS=pci:v00001002d0000{d['device']:04X}\n")
    write(f"{dev}/unique_id", d["unique_id"])
    write(f"{dev}/vbios_version", d["vbios"])
    if d["product_name"]:
        write(f"{dev}/product_name", d["product_name"])
    for name, value in d["attrs"].items():
        write(f"{dev}/{name}", value)
    write(f"{dev}/power_dpm_force_performance_level", "auto")
    write(f"{dev}/current_link_width", 16)
    write(f"{dev}/current_link_speed", "32.0 GT/s PCIe" if d["bus"] == 0xC1 else "16.0 GT/s PCIe")
    write(f"{dev}/gpu_metrics", d["metrics"])
    to_root = "../" * (d["pci_path"].count("/") + 2)  # from the device directory up to the root
    link(f"{dev}/driver", to_root + "bus/pci/drivers/amdgpu")
    write(f"{root}/bus/pci/drivers/amdgpu/module", "amdgpu")
    link(f"{dev}/subsystem", to_root + "bus/pci")
    write(f"{dev}/drm/card{card}/dev", f"226:{card}")
    write(f"{dev}/drm/{render}/dev", f"226:{128 + card}")
    link(f"{dev}/drm/card{card}/device", "../../../" + bdf)
    link(f"{dev}/drm/{render}/device", "../../../" + bdf)
    hwmon = f"{dev}/hwmon/hwmon{card}"
    write(f"{hwmon}/name", "amdgpu")
    for name, value in d["hwmon"].items():
        write(f"{hwmon}/{name}", value)
    link(f"{hwmon}/device", "../../../" + bdf)
    # class/ links, relative like the kernel's (a bind mount resolves them inside the tree).
    up = "../../devices/" + d["pci_path"]
    link(f"{root}/class/drm/card{card}", f"{up}/drm/card{card}")
    link(f"{root}/class/drm/{render}", f"{up}/drm/{render}")
    link(f"{root}/class/hwmon/hwmon{card}", f"{up}/hwmon/hwmon{card}")
    write(f"{root}/class/drm/version", "drm 1.1.0 20060810")
    # The driver module, as rocm-smi checks it.
    write(f"{root}/module/amdgpu/initstate", "live")
    write(f"{root}/module/amdgpu/version", DRIVER_VERSION)
    # The KFD topology: node 0 the CPU, node card+1 this GPU.
    topo = f"{root}/class/kfd/kfd/topology"
    write(f"{topo}/generation_id", 1)
    write(f"{topo}/system_properties", "platform_oem 0\nplatform_id 0\nplatform_rev 0\n")
    for node, gpu in ((0, False), (card + 1, True)):
        n = f"{topo}/nodes/{node}"
        write(f"{n}/properties", kfd_properties(d, gpu))
        write(f"{n}/gpu_id", 0 if not gpu else 53534 if d["bus"] == 0xC1 else 41213)
        write(f"{n}/name", "" if not gpu else d["kfd_name"])
        write(f"{n}/mem_banks/0/properties",
              "heap_type %d\nsize_in_bytes %d\nflags 0\nwidth %d\nmem_clk_max %d\n" % (
                  1 if gpu else 0,
                  d["attrs"]["mem_info_vram_total"] if gpu else 67108864000,
                  4096 if gpu else 64, 1300 if gpu else 3200))
        write(f"{n}/io_links/0/properties",
              "type 2\nversion_major 0\nversion_minor 0\nnode_from %d\nnode_to %d\n"
              "weight %d\nmin_latency 0\nmax_latency 0\nmin_bandwidth 0\n"
              "max_bandwidth 0\nrecommended_transfer_size 0\nflags 3\n" % (
                  node, 0 if gpu else 1, 20))
        write(f"{n}/caches/.keep", "")


# Hosts with several GPUs, named by the GPUs in card order (PCI bus order, as amdgpu probes them).
HOSTS = {name: [name] for name in DEVICES}
HOSTS["amd-2gpu"] = ["rx7900", "mi300x"]


def build(out):
    for name, gpus in HOSTS.items():
        root = os.path.join(out, name)
        if os.path.lexists(root):
            shutil.rmtree(root)
        for card, gpu in enumerate(gpus):
            build_tree(root, DEVICES[gpu], card)


def same_tree(a, b):
    """True when the trees hold the same names, file bytes and link targets."""
    for dirpath, dirnames, filenames in os.walk(a):
        rel = os.path.relpath(dirpath, a)
        other = os.path.join(b, rel)
        if not os.path.isdir(other) or os.path.islink(other):
            print(f"missing directory {rel}", file=sys.stderr)
            return False
        if sorted(dirnames + filenames) != sorted(os.listdir(other)):
            print(f"{rel}: entries differ", file=sys.stderr)
            return False
        for name in dirnames + filenames:
            pa, pb = os.path.join(dirpath, name), os.path.join(other, name)
            if os.path.islink(pa) or os.path.islink(pb):
                if not (os.path.islink(pa) and os.path.islink(pb)) or \
                        os.readlink(pa) != os.readlink(pb):
                    print(f"{rel}/{name}: link differs", file=sys.stderr)
                    return False
            elif name in filenames and not filecmp.cmp(pa, pb, shallow=False):
                print(f"{rel}/{name}: content differs", file=sys.stderr)
                return False
    return True


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    if argv[1:2] == ["--check"]:
        with tempfile.TemporaryDirectory() as tmp:
            build(tmp)
            ok = all(same_tree(os.path.join(tmp, n), os.path.join(here, n)) and
                     same_tree(os.path.join(here, n), os.path.join(tmp, n)) for n in HOSTS)
        if not ok:
            print("fixtures differ from make_fixtures.py: run it and commit the result",
                  file=sys.stderr)
            return 1
        print("fixtures match make_fixtures.py")
        return 0
    out = argv[2] if argv[1:2] == ["--out"] else here
    build(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
