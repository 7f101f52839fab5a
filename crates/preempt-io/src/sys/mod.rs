//! Safe wrappers over the Linux system calls preempt uses.
