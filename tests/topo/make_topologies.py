#!/usr/bin/env python3
"""Makes the hwloc XML machine shapes the topology tests load (CFX_TOPO_FILE).

The CPU and memory side of each file comes from hwloc itself (`lstopo --input "<synthetic>" --of
xml`); the PCI side (host bridges, PCIe switches, GPUs, NICs and their OS devices) is then added
the way hwloc's Linux backend writes it, plus the two infos Conflux adds when it dumps a live
machine (CFX_TOPO_DUMP_FILE): Port1LinkLayer and Port1RateGbps on InfiniBand/RoCE devices
(from libibverbs) and LinkSpeedGbps on Ethernet devices (from sysfs).

  tests/topo/make_topologies.py            rewrite fireflyer.xml, dgx.xml and numa4.xml here
(single.xml is `lstopo-no-graphics --of xml` of the one-socket development VM, unedited but for
the process name.) Needs hwloc's lstopo-no-graphics (Debian: hwloc-nox).
"""
import os
import subprocess
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_NAME = "GA100 [A100 PCIe 40GB]"


def synthetic(desc):
    out = subprocess.run(["lstopo-no-graphics", "--input", desc, "--of", "xml", "-"],
                         check=True, capture_output=True, text=True).stdout
    root = ET.fromstring(out.split("\n", 2)[2])  # drop the XML declaration and DOCTYPE
    for info in root.iter("info"):
        if info.get("name") == "ProcessName":
            info.set("value", "make_topologies.py")
    return root


def bridge_host(parent, lo, hi):
    return ET.SubElement(parent, "object", {"type": "Bridge", "bridge_type": "0-1", "depth": "0",
                                            "bridge_pci": f"0000:[{lo:02x}-{hi:02x}]"})


def bridge_pci(parent, busid, lo, hi, depth):
    return ET.SubElement(parent, "object", {
        "type": "Bridge", "bridge_type": "1-1", "depth": str(depth), "bridge_pci": f"0000:[{lo:02x}-{hi:02x}]",
        "pci_busid": f"0000:{busid}", "pci_type": "0604 [10b5:8796] [0000:0000] ab", "pci_link_speed": "15.753846"})


def gpu(parent, bus):
    dev = ET.SubElement(parent, "object", {"type": "PCIDev", "pci_busid": f"0000:{bus:02x}:00.0",
                                           "pci_type": "0302 [10de:20f1] [10de:145f] a1",
                                           "pci_link_speed": "31.507692"})
    ET.SubElement(dev, "info", {"name": "PCIVendor", "value": "NVIDIA Corporation"})
    ET.SubElement(dev, "info", {"name": "PCIDevice", "value": GPU_NAME})


def ib_nic(parent, bus, index, gbps):
    dev = ET.SubElement(parent, "object", {"type": "PCIDev", "pci_busid": f"0000:{bus:02x}:00.0",
                                           "pci_type": "0207 [15b3:101b] [15b3:0007] 00",
                                           "pci_link_speed": "31.507692"})
    ET.SubElement(dev, "info", {"name": "PCIVendor", "value": "Mellanox Technologies"})
    ET.SubElement(dev, "info", {"name": "PCIDevice", "value": "MT28908 Family [ConnectX-6]"})
    net = ET.SubElement(dev, "object", {"type": "OSDev", "name": f"ibp{bus}s0", "osdev_type": "2"})
    ET.SubElement(net, "info", {"name": "Address", "value": f"00:00:10:29:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:{bus:02x}:00:{index:02x}"})
    ofed = ET.SubElement(dev, "object", {"type": "OSDev", "name": f"mlx5_{index}", "osdev_type": "3"})
    for k, v in (("NodeGUID", f"0c42:a103:00{bus:02x}:00{index:02x}"), ("Port1State", "4"),
                 ("Port1LinkLayer", "InfiniBand"), ("Port1RateGbps", str(gbps))):
        ET.SubElement(ofed, "info", {"name": k, "value": v})


def eth_nic(parent, bus, name, gbps):
    dev = ET.SubElement(parent, "object", {"type": "PCIDev", "pci_busid": f"0000:{bus:02x}:00.0",
                                           "pci_type": "0200 [8086:1521] [8086:0001] 01",
                                           "pci_link_speed": "3.938462"})
    net = ET.SubElement(dev, "object", {"type": "OSDev", "name": name, "osdev_type": "2"})
    ET.SubElement(net, "info", {"name": "LinkSpeedGbps", "value": str(gbps)})


def packages(root):
    return [o for o in root.iter("object") if o.get("type") == "Package"]


def write(root, name):
    tree = ET.ElementTree(root)
    ET.indent(tree, "  ")
    with open(os.path.join(HERE, name), "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n')
        tree.write(f, encoding="unicode")
        f.write("\n")


def fireflyer():
    """(a) Fire-Flyer 2 node: 2 sockets, 8 PCIe A100s (a pair per PCIe switch, two switches per
    socket), one 200 Gbit/s InfiniBand NIC on socket 0, a 1 Gbit/s management Ethernet port."""
    root = synthetic("pack:2 [numa(memory=274877906944)] l3:4 core:8 pu:2")
    pk = packages(root)
    bus = 0
    for s, p in enumerate(pk):
        hb = bridge_host(p, s * 0x80, s * 0x80 + 0x7f)
        for sw in range(2):
            base = s * 0x80 + 0x10 + sw * 0x10
            up = bridge_pci(hb, f"{s * 0x80:02x}:{sw + 1:02x}.0", base, base + 0xf, 1)
            for g in range(2):
                down = bridge_pci(up, f"{base:02x}:{g:02x}.0", base + 1 + g, base + 1 + g, 2)
                gpu(down, base + 1 + g)
        if s == 0:
            rp = bridge_pci(hb, "00:05.0", 0x50, 0x50, 1)
            ib_nic(rp, 0x50, 0, 200)
            rp2 = bridge_pci(hb, "00:06.0", 0x60, 0x60, 1)
            eth_nic(rp2, 0x60, "eno1", 1)
    write(root, "fireflyer.xml")


def dgx():
    """(b) DGX-like: 2 sockets, four PCIe switches (two per socket), each with two GPUs and two
    200 Gbit/s InfiniBand NICs: one NIC per GPU, on the GPU's own switch."""
    root = synthetic("pack:2 [numa(memory=549755813888)] l3:8 core:8 pu:2")
    pk = packages(root)
    nic = 0
    for s, p in enumerate(pk):
        hb = bridge_host(p, s * 0x80, s * 0x80 + 0x7f)
        for sw in range(2):
            base = s * 0x80 + 0x10 + sw * 0x20
            up = bridge_pci(hb, f"{s * 0x80:02x}:{sw + 1:02x}.0", base, base + 0x1f, 1)
            for g in range(2):
                down = bridge_pci(up, f"{base:02x}:{g:02x}.0", base + 1 + g, base + 1 + g, 2)
                gpu(down, base + 1 + g)
            for n in range(2):
                down = bridge_pci(up, f"{base:02x}:{n + 8:02x}.0", base + 0x10 + n, base + 0x10 + n, 2)
                ib_nic(down, base + 0x10 + n, nic, 200)
                nic += 1
        if s == 0:
            rp = bridge_pci(hb, "00:07.0", 0x70, 0x70, 1)
            eth_nic(rp, 0x70, "enp112s0", 25)
    write(root, "dgx.xml")


def numa4():
    """(d) 4 NUMA nodes (2 sockets, 2 nodes each, as AMD's NPS2), no GPU and no NIC."""
    root = synthetic("pack:2 numa:2(memory=68719476736) l3:1 core:8 pu:2")
    write(root, "numa4.xml")


if __name__ == "__main__":
    fireflyer()
    dgx()
    numa4()
