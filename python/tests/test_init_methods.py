"""init_process_group("conflux") through tcp:// and file:// rendezvous, and a proper-subset
new_group (init_worker.py); torch's suite covers file:// again (every test of test_torch_suite.py)."""
import tempfile

import launch


def test_tcp_init_method_and_a_proper_subset_group():
    launch.assert_ok(launch.run("init_worker.py", 3, "tcp", timeout=120))


def test_file_init_method_and_a_proper_subset_group():
    with tempfile.TemporaryDirectory() as d:
        launch.assert_ok(launch.run("init_worker.py", 3, "file", f"{d}/rendezvous", timeout=120))
