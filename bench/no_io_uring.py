"""A machine without io_uring, for one child process: `preexec_fn=refuse_io_uring` installs a
seccomp filter that fails io_uring_setup with EPERM, as `kernel.io_uring_disabled=2` or a
container's seccomp profile would. nodelay then takes the loop such machines get by default
(epoll, its closed-loop waits batched by timer). x86_64 only (the syscall's number)."""
import ctypes
import struct

SYS_IO_URING_SETUP = 425  # x86_64
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, EPERM = 0x7FFF0000, 0x00050000, 1


def refuse_io_uring():
    """Runs in the child between fork and exec."""
    statements = [
        (BPF_LD_W_ABS, 0, 0, 0),  # the syscall number, at offset 0 of seccomp_data
        (BPF_JEQ_K, 0, 1, SYS_IO_URING_SETUP),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    code = b"".join(struct.pack("HBBI", *s) for s in statements)
    filter_buffer = ctypes.create_string_buffer(code)
    # struct sock_fprog { unsigned short len; struct sock_filter *filter; }
    program = struct.pack("HxxxxxxP", len(statements), ctypes.addressof(filter_buffer))
    program_buffer = ctypes.create_string_buffer(program)
    libc = ctypes.CDLL(None, use_errno=True)
    # Pointers as unsigned longs: ctypes would pass a bare int as a 32-bit int.
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program_buffer), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
