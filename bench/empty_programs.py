"""Empty eBPF programs on the tracepoints of nodelay watch's hot programs
(bench/empty_tracepoints.bpf.c), compiled with clang and attached through libbpf (libbpf-dev,
which scripts/setup.sh installs) for as long as the context lasts: the floor a program on
these tracepoints pays, for bench/kernel_holds_cost.py."""
import ctypes
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("empty_send", "empty_ack")


def compile_object(workdir):
    """The object, built by clang as crates/ebpf/build.rs builds nodelay's."""
    target = os.path.join(workdir, "empty_tracepoints.bpf.o")
    multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{multiarch or 'x86_64-linux-gnu'}",
                    "-c", os.path.join(HERE, "empty_tracepoints.bpf.c"), "-o", target], check=True)
    return target


class EmptyPrograms:
    """`with EmptyPrograms(object_path):` the programs attached inside, detached after."""

    def __init__(self, object_path):
        self.object_path = object_path
        self.lib = ctypes.CDLL("libbpf.so.1")
        self.lib.bpf_object__open_file.restype = ctypes.c_void_p
        self.lib.bpf_object__open_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        self.lib.bpf_object__load.argtypes = [ctypes.c_void_p]
        self.lib.bpf_object__next_program.restype = ctypes.c_void_p
        self.lib.bpf_object__next_program.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.bpf_program__attach.restype = ctypes.c_void_p
        self.lib.bpf_program__attach.argtypes = [ctypes.c_void_p]
        self.lib.bpf_link__destroy.argtypes = [ctypes.c_void_p]
        self.lib.bpf_object__close.argtypes = [ctypes.c_void_p]
        self.object = None
        self.links = []

    def __enter__(self):
        self.object = self.lib.bpf_object__open_file(self.object_path.encode(), None)
        if not self.object or self.lib.bpf_object__load(self.object) != 0:
            raise SystemExit(f"libbpf could not load {self.object_path}")
        program = self.lib.bpf_object__next_program(self.object, None)
        while program:
            link = self.lib.bpf_program__attach(program)
            if not link:
                self.__exit__()
                raise SystemExit("libbpf could not attach the empty programs")
            self.links.append(link)
            program = self.lib.bpf_object__next_program(self.object, program)
        return self

    def __exit__(self, *_):
        for link in self.links:
            self.lib.bpf_link__destroy(link)
        self.links = []
        if self.object:
            self.lib.bpf_object__close(self.object)
            self.object = None


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as workdir, EmptyPrograms(compile_object(workdir)):
        print(subprocess.run(["bpftool", "prog", "show", "name", NAMES[0]], capture_output=True,
                             text=True).stdout.strip())
