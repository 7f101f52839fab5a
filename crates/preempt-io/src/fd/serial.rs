//! [`SerialSource`]: a serial port as a hardware-task event source.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use super::FdSource;
use crate::sys::serial::{SerialConfig, SerialPort};

/// A raw, non-blocking serial port; its event is the bytes waiting, up to the buffer's size
/// (a serial port is a byte stream: framing is the task's job).
#[derive(Debug)]
pub struct SerialSource {
    port: SerialPort,
    buf: Box<[u8]>,
}

impl SerialSource {
    /// Opens and configures the port (see [`SerialPort::open`]) with a 4 KiB read buffer (the
    /// size of the kernel's tty flip buffer chunks, so one read usually empties it).
    ///
    /// # Errors
    /// As [`SerialPort::open`].
    pub fn open(path: impl AsRef<Path>, config: &SerialConfig) -> io::Result<SerialSource> {
        Self::from_port(SerialPort::open(path, config)?, 4_096)
    }

    /// Wraps an open port with a `capacity`-byte read buffer.
    ///
    /// # Errors
    /// `InvalidInput` for a zero capacity.
    pub fn from_port(port: SerialPort, capacity: usize) -> io::Result<SerialSource> {
        if capacity == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a serial source needs a read buffer of at least 1 byte",
            ));
        }
        Ok(SerialSource {
            port,
            buf: vec![0; capacity].into_boxed_slice(),
        })
    }

    /// The port, for writing and reconfiguring.
    pub fn port(&self) -> &SerialPort {
        &self.port
    }
}

impl FdSource for SerialSource {
    type Event<'a> = &'a [u8];

    fn read_event(&mut self) -> io::Result<Option<&[u8]>> {
        match self.port.read(&mut self.buf) {
            Ok(0) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("serial port {} hung up", self.port.path().display()),
            )),
            Ok(n) => Ok(Some(&self.buf[..n])),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("serial port {}: {e}", self.port.path().display()),
            )),
        }
    }
}

impl AsFd for SerialSource {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.port.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fd::Poller;
    use crate::sys::serial::open_pty;

    #[test]
    fn bytes_from_the_device_wake_the_poller_and_are_read_raw() {
        let pty = open_pty().unwrap();
        let mut source = SerialSource::open(pty.slave_path(), &SerialConfig::new(460_800)).unwrap();
        let mut poller = Poller::new().unwrap();
        poller.register(&source, 4).unwrap();
        assert!(source.read_event().unwrap().is_none());
        pty.write(b"\x02IMU,1,2,3\r\n\x03").unwrap();
        let mut got = Vec::new();
        while got.len() < 13 {
            let mut ready = [Default::default(); 1];
            assert_eq!(poller.wait_until(&mut ready, None).unwrap(), 1);
            source
                .drain(4, |bytes| got.extend_from_slice(bytes))
                .unwrap();
        }
        assert_eq!(got, b"\x02IMU,1,2,3\r\n\x03");
        source.port().write(b"ACK").unwrap();
        let mut back = [0_u8; 3];
        assert_eq!(pty.read(&mut back).unwrap(), 3);
        assert_eq!(&back, b"ACK");
    }

    #[test]
    fn a_hang_up_is_an_error_that_names_the_port() {
        let pty = open_pty().unwrap();
        let path = pty.slave_path().to_owned();
        let mut source = SerialSource::open(&path, &SerialConfig::new(9_600)).unwrap();
        drop(pty);
        let err = source.read_event().unwrap_err();
        assert!(err.to_string().contains(&*path.to_string_lossy()), "{err}");
    }
}
