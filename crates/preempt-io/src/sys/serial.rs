//! Serial ports (`termios(3)`): raw mode, baud rate, framing, flow control; and pseudo-terminal
//! pairs that stand in for a serial line in tests and simulators.
//!
//! A real-time task reading a UART wants bytes exactly as they arrive: no line editing, no echo,
//! no CR/LF translation, no signals on `^C`. [`SerialPort::open`] therefore puts the port in
//! raw mode (`cfmakeraw`), sets the baud rate and framing, ignores the modem's carrier
//! (`CLOCAL`), enables the receiver (`CREAD`), opens non-blocking (so a task's read never
//! sleeps; epoll tells it when bytes are there), and reads the settings back to catch a driver
//! that silently refuses a rate.
//!
//! ```
//! use preempt_io::sys::serial::{open_pty, SerialConfig, SerialPort};
//! let pty = open_pty()?;                    // a virtual serial cable
//! let port = SerialPort::open(pty.slave_path(), &SerialConfig::new(115_200))?;
//! pty.write(b"$GPGGA\r\n")?;                // the "device" sends
//! let mut buf = [0_u8; 16];
//! let n = loop {
//!     match port.read(&mut buf) {
//!         Ok(n) => break n,
//!         Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
//!         Err(e) => return Err(e),
//!     }
//! };
//! assert_eq!(&buf[..n], b"$GPGGA\r\n");     // raw: the CR survives
//! assert_eq!(port.settings()?.baud, 115_200);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::fdio;

/// Bits per character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataBits {
    /// 5 bits.
    Five,
    /// 6 bits.
    Six,
    /// 7 bits.
    Seven,
    /// 8 bits.
    Eight,
}

/// Parity bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parity {
    /// No parity bit.
    None,
    /// Even parity (checked on input).
    Even,
    /// Odd parity (checked on input).
    Odd,
}

/// Stop bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopBits {
    /// One.
    One,
    /// Two.
    Two,
}

/// Flow control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowControl {
    /// None.
    None,
    /// RTS/CTS lines.
    Hardware,
    /// XON/XOFF characters.
    Software,
}

/// Line settings. [`SerialConfig::new`] gives 8N1 without flow control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SerialConfig {
    /// Baud rate; one of [`BAUD_RATES`].
    pub baud: u32,
    /// Bits per character.
    pub data_bits: DataBits,
    /// Parity.
    pub parity: Parity,
    /// Stop bits.
    pub stop_bits: StopBits,
    /// Flow control.
    pub flow_control: FlowControl,
}

impl SerialConfig {
    /// `baud` 8N1, no flow control.
    pub fn new(baud: u32) -> SerialConfig {
        SerialConfig {
            baud,
            data_bits: DataBits::Eight,
            parity: Parity::None,
            stop_bits: StopBits::One,
            flow_control: FlowControl::None,
        }
    }
}

/// The baud rates `termios` can set with a `B…` constant on Linux.
pub const BAUD_RATES: [u32; 30] = [
    50, 75, 110, 134, 150, 200, 300, 600, 1_200, 1_800, 2_400, 4_800, 9_600, 19_200, 38_400,
    57_600, 115_200, 230_400, 460_800, 500_000, 576_000, 921_600, 1_000_000, 1_152_000, 1_500_000,
    2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000,
];

const SPEEDS: [libc::speed_t; 30] = [
    libc::B50,
    libc::B75,
    libc::B110,
    libc::B134,
    libc::B150,
    libc::B200,
    libc::B300,
    libc::B600,
    libc::B1200,
    libc::B1800,
    libc::B2400,
    libc::B4800,
    libc::B9600,
    libc::B19200,
    libc::B38400,
    libc::B57600,
    libc::B115200,
    libc::B230400,
    libc::B460800,
    libc::B500000,
    libc::B576000,
    libc::B921600,
    libc::B1000000,
    libc::B1152000,
    libc::B1500000,
    libc::B2000000,
    libc::B2500000,
    libc::B3000000,
    libc::B3500000,
    libc::B4000000,
];

fn speed_of(baud: u32) -> io::Result<libc::speed_t> {
    BAUD_RATES
        .iter()
        .position(|&b| b == baud)
        .map(|i| SPEEDS[i])
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("baud rate {baud} is not one termios can set; use one of {BAUD_RATES:?}"),
            )
        })
}

fn baud_of(speed: libc::speed_t) -> Option<u32> {
    SPEEDS
        .iter()
        .position(|&s| s == speed)
        .map(|i| BAUD_RATES[i])
}

fn check(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc != 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(err.kind(), format!("{what}: {err}")));
    }
    Ok(())
}

fn get_attrs(fd: BorrowedFd<'_>) -> io::Result<libc::termios> {
    // SAFETY: termios is plain data; all-zero is a valid value that tcgetattr overwrites.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a valid, writable termios for the duration of the call.
    let rc = unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut t) };
    check(rc, "tcgetattr")?;
    Ok(t)
}

/// An open serial port (or any terminal device) in raw, non-blocking mode; closed on drop.
#[derive(Debug)]
pub struct SerialPort {
    fd: OwnedFd,
    path: PathBuf,
}

impl SerialPort {
    /// Opens `path` (`/dev/ttyAMA0`, `/dev/ttyUSB0`, a pty slave) read-write, without making it
    /// the controlling terminal, non-blocking and close-on-exec, and applies `config`.
    ///
    /// # Errors
    /// The open error with the path (`EACCES`: add the user to the `dialout` group);
    /// `InvalidInput` if the file is not a terminal or the baud rate is not supported.
    pub fn open(path: impl AsRef<Path>, config: &SerialConfig) -> io::Result<SerialPort> {
        let path = path.as_ref();
        speed_of(config.baud)?;
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "a path cannot contain NUL")
        })?;
        let flags = libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                err.kind(),
                format!("cannot open serial port {}: {err}", path.display()),
            ));
        }
        // SAFETY: `fd` is a freshly opened descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: isatty only inspects the descriptor.
        if unsafe { libc::isatty(fd.as_raw_fd()) } != 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a terminal device, so not a serial port",
                    path.display()
                ),
            ));
        }
        let port = SerialPort {
            fd,
            path: path.to_owned(),
        };
        port.configure(config)?;
        Ok(port)
    }

    /// The path the port was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Applies `config` in raw mode, effective at once, and verifies the driver took the rate.
    ///
    /// # Errors
    /// `InvalidInput` for an unsupported rate or a rate the driver refused; whatever
    /// `tcgetattr`/`tcsetattr` report.
    pub fn configure(&self, config: &SerialConfig) -> io::Result<()> {
        let speed = speed_of(config.baud)?;
        let mut t = get_attrs(self.fd.as_fd())?;
        // SAFETY: `t` is a valid termios.
        unsafe { libc::cfmakeraw(&mut t) };
        t.c_cflag |= libc::CLOCAL | libc::CREAD;
        t.c_cflag &= !(libc::CSIZE | libc::PARENB | libc::PARODD | libc::CSTOPB | libc::CRTSCTS);
        t.c_cflag |= match config.data_bits {
            DataBits::Five => libc::CS5,
            DataBits::Six => libc::CS6,
            DataBits::Seven => libc::CS7,
            DataBits::Eight => libc::CS8,
        };
        t.c_iflag &= !(libc::INPCK | libc::IXON | libc::IXOFF | libc::IXANY);
        match config.parity {
            Parity::None => {}
            Parity::Even => {
                t.c_cflag |= libc::PARENB;
                t.c_iflag |= libc::INPCK;
            }
            Parity::Odd => {
                t.c_cflag |= libc::PARENB | libc::PARODD;
                t.c_iflag |= libc::INPCK;
            }
        }
        if config.stop_bits == StopBits::Two {
            t.c_cflag |= libc::CSTOPB;
        }
        match config.flow_control {
            FlowControl::None => {}
            FlowControl::Hardware => t.c_cflag |= libc::CRTSCTS,
            FlowControl::Software => t.c_iflag |= libc::IXON | libc::IXOFF,
        }
        // A blocking reader (if someone clears O_NONBLOCK) returns as soon as one byte is there.
        t.c_cc[libc::VMIN] = 1;
        t.c_cc[libc::VTIME] = 0;
        // SAFETY: `t` is a valid termios; the speed is one of the B… constants.
        check(unsafe { libc::cfsetispeed(&mut t, speed) }, "cfsetispeed")?;
        // SAFETY: as above.
        check(unsafe { libc::cfsetospeed(&mut t, speed) }, "cfsetospeed")?;
        // SAFETY: `t` is a valid termios that outlives the call.
        let rc = unsafe { libc::tcsetattr(self.fd.as_raw_fd(), libc::TCSANOW, &t) };
        check(rc, "tcsetattr")?;
        // tcsetattr succeeds if *any* change was applied, and some drivers silently keep their
        // own framing (a pty forces 8 data bits without parity): read back what was kept.
        let applied = self.settings()?;
        if applied != *config {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: the driver kept {applied:?} instead of {config:?}",
                    self.path.display(),
                ),
            ));
        }
        Ok(())
    }

    /// The settings in force, read back from the driver.
    ///
    /// # Errors
    /// `InvalidData` for a rate outside [`BAUD_RATES`] (set by another program with
    /// `BOTHER`); whatever `tcgetattr` reports.
    pub fn settings(&self) -> io::Result<SerialConfig> {
        let t = get_attrs(self.fd.as_fd())?;
        // SAFETY: `t` is a valid termios.
        let speed = unsafe { libc::cfgetospeed(&t) };
        let baud = baud_of(speed).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: unrecognised termios speed {speed:#o}{}",
                    self.path.display(),
                    if super::cpu::user_mode_emulation().is_some() {
                        " (this binary runs under qemu-user, whose termios translation loses \
                         rates above 460800 Bd up to qemu 7.2: run on the target)"
                    } else {
                        ""
                    }
                ),
            )
        })?;
        let c = t.c_cflag;
        Ok(SerialConfig {
            baud,
            data_bits: match c & libc::CSIZE {
                libc::CS5 => DataBits::Five,
                libc::CS6 => DataBits::Six,
                libc::CS7 => DataBits::Seven,
                _ => DataBits::Eight,
            },
            parity: match (c & libc::PARENB != 0, c & libc::PARODD != 0) {
                (false, _) => Parity::None,
                (true, false) => Parity::Even,
                (true, true) => Parity::Odd,
            },
            stop_bits: if c & libc::CSTOPB != 0 {
                StopBits::Two
            } else {
                StopBits::One
            },
            flow_control: if c & libc::CRTSCTS != 0 {
                FlowControl::Hardware
            } else if t.c_iflag & libc::IXON != 0 {
                FlowControl::Software
            } else {
                FlowControl::None
            },
        })
    }

    /// Whether the line discipline is raw: no canonical mode, echo, signals or CR/LF mapping.
    ///
    /// # Errors
    /// Whatever `tcgetattr` reports.
    pub fn is_raw(&self) -> io::Result<bool> {
        let t = get_attrs(self.fd.as_fd())?;
        let cooked_l = libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN;
        let cooked_i = libc::ICRNL | libc::INLCR | libc::IGNCR | libc::ISTRIP;
        Ok(t.c_lflag & cooked_l == 0 && t.c_iflag & cooked_i == 0 && t.c_oflag & libc::OPOST == 0)
    }

    /// Reads available bytes.
    ///
    /// # Errors
    /// `WouldBlock` when none are waiting; `EIO` once the other end hung up; whatever `read`
    /// reports.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        fdio::read(self.fd.as_fd(), buf)
    }

    /// Writes bytes; may write fewer than given when the output buffer is full.
    ///
    /// # Errors
    /// `WouldBlock` when the output buffer is full; whatever `write` reports.
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        fdio::write(self.fd.as_fd(), buf)
    }

    /// Waits until everything written has been transmitted (`tcdrain`; blocks: not for
    /// real-time code).
    ///
    /// # Errors
    /// Whatever `tcdrain` reports.
    pub fn drain_output(&self) -> io::Result<()> {
        // SAFETY: tcdrain only takes the descriptor.
        check(unsafe { libc::tcdrain(self.fd.as_raw_fd()) }, "tcdrain")
    }

    /// Discards received bytes not yet read (`tcflush(TCIFLUSH)`).
    ///
    /// # Errors
    /// Whatever `tcflush` reports.
    pub fn discard_input(&self) -> io::Result<()> {
        // SAFETY: tcflush only takes the descriptor and a queue selector.
        check(
            unsafe { libc::tcflush(self.fd.as_raw_fd(), libc::TCIFLUSH) },
            "tcflush",
        )
    }
}

impl AsFd for SerialPort {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for SerialPort {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A pseudo-terminal: the master end is "the device", the slave path is "the serial port".
#[derive(Debug)]
pub struct Pty {
    master: OwnedFd,
    slave: PathBuf,
}

/// Opens a pseudo-terminal pair (`posix_openpt`, `grantpt`, `unlockpt`, `ptsname_r`).
///
/// # Errors
/// Whatever those calls report (`ENOENT`/`EIO` without `/dev/pts`).
pub fn open_pty() -> io::Result<Pty> {
    // SAFETY: posix_openpt takes flags only.
    let fd = unsafe { libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) };
    if fd < 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(err.kind(), format!("posix_openpt: {err}")));
    }
    // SAFETY: `fd` is a freshly opened descriptor that nothing else owns.
    let master = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: grantpt and unlockpt take the master descriptor only.
    check(unsafe { libc::grantpt(master.as_raw_fd()) }, "grantpt")?;
    // SAFETY: as above.
    check(unsafe { libc::unlockpt(master.as_raw_fd()) }, "unlockpt")?;
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: `name` is writable for its full length, which is passed; ptsname_r returns an
    // error number instead of setting errno.
    let rc = unsafe { libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    // SAFETY: on success ptsname_r stored a NUL-terminated string in `name`.
    let slave = unsafe { CStr::from_ptr(name.as_ptr()) };
    let slave = PathBuf::from(std::ffi::OsStr::from_bytes(slave.to_bytes()));
    Ok(Pty { master, slave })
}

impl Pty {
    /// The slave device path (`/dev/pts/N`), to open with [`SerialPort::open`].
    pub fn slave_path(&self) -> &Path {
        &self.slave
    }

    /// Sends bytes to whoever has the slave open ("the device transmits").
    ///
    /// # Errors
    /// Whatever `write` reports.
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        fdio::write(self.master.as_fd(), buf)
    }

    /// Receives bytes written to the slave; blocks until some arrive unless
    /// [`Pty::set_nonblocking`] was called.
    ///
    /// # Errors
    /// Whatever `read` reports (`EIO` once the slave is closed).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        fdio::read(self.master.as_fd(), buf)
    }

    /// Switches the master between blocking and non-blocking I/O.
    ///
    /// # Errors
    /// Whatever `fcntl` reports.
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        fdio::set_nonblocking(self.master.as_fd(), on)
    }
}

impl AsFd for Pty {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.master.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_some(port: &SerialPort, buf: &mut [u8]) -> usize {
        loop {
            match port.read(buf) {
                Ok(n) => return n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn settings_round_trip() {
        let pty = open_pty().unwrap();
        let port = SerialPort::open(pty.slave_path(), &SerialConfig::new(115_200)).unwrap();
        assert!(port.is_raw().unwrap());
        let cfg = SerialConfig {
            baud: 9_600,
            stop_bits: StopBits::Two,
            flow_control: FlowControl::Software,
            ..SerialConfig::new(9_600)
        };
        port.configure(&cfg).unwrap();
        assert_eq!(port.settings().unwrap(), cfg);
        // qemu-user (7.2, Debian 12) translates termios rates up to 460800 Bd only (its
        // linux-user cflag table); an arm64 kernel keeps 4 MBd (checked in a qemu-system guest
        // running Debian's 6.1 arm64 kernel, docs/MEASURING.md).
        let fast = match crate::sys::cpu::user_mode_emulation() {
            Some(host) => {
                eprintln!("under qemu-user on {host}: 460800 Bd instead of 4 MBd");
                460_800
            }
            None => 4_000_000,
        };
        let cfg = SerialConfig {
            flow_control: FlowControl::Hardware,
            ..SerialConfig::new(fast)
        };
        port.configure(&cfg).unwrap();
        assert_eq!(port.settings().unwrap(), cfg);
        assert!(port.is_raw().unwrap());
    }

    #[test]
    fn framing_a_driver_refuses_is_reported_not_ignored() {
        // The pty driver forces 8 data bits without parity (drivers/tty/pty.c).
        let pty = open_pty().unwrap();
        let port = SerialPort::open(pty.slave_path(), &SerialConfig::new(115_200)).unwrap();
        let cfg = SerialConfig {
            data_bits: DataBits::Seven,
            parity: Parity::Odd,
            ..SerialConfig::new(115_200)
        };
        let err = port.configure(&cfg).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("the driver kept"), "{err}");
    }

    #[test]
    fn bytes_pass_both_ways_untranslated() {
        let pty = open_pty().unwrap();
        let port = SerialPort::open(pty.slave_path(), &SerialConfig::new(115_200)).unwrap();
        let frame = [0x7e, b'\r', b'\n', 0x03, 0x00, 0xff, 0x1a];
        assert_eq!(pty.write(&frame).unwrap(), frame.len());
        let mut got = Vec::new();
        let mut buf = [0_u8; 64];
        while got.len() < frame.len() {
            let n = read_some(&port, &mut buf);
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, frame, "raw mode must not map CR/NL or eat ^C/^Z");
        assert_eq!(port.write(b"ok\n").unwrap(), 3);
        let mut back = [0_u8; 8];
        let n = pty.read(&mut back).unwrap();
        assert_eq!(&back[..n], b"ok\n", "no NL -> CRNL output mapping");
        // Nothing left: a non-blocking read says so instead of sleeping.
        assert_eq!(
            port.read(&mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn bad_ports_and_rates_are_explained() {
        let err = SerialPort::open("/dev/null", &SerialConfig::new(115_200)).unwrap_err();
        assert!(err.to_string().contains("not a terminal"), "{err}");
        let pty = open_pty().unwrap();
        let err = SerialPort::open(pty.slave_path(), &SerialConfig::new(123_456)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("115200"), "{err}");
        let err = SerialPort::open("/dev/ttyDOESNOTEXIST", &SerialConfig::new(9_600)).unwrap_err();
        assert!(err.to_string().contains("/dev/ttyDOESNOTEXIST"), "{err}");
    }

    #[test]
    fn a_hung_up_line_is_an_error_not_silence() {
        let pty = open_pty().unwrap();
        let port = SerialPort::open(pty.slave_path(), &SerialConfig::new(115_200)).unwrap();
        drop(pty);
        let mut buf = [0_u8; 4];
        match port.read(&mut buf) {
            Err(e) => assert_ne!(e.kind(), io::ErrorKind::WouldBlock, "{e}"),
            Ok(n) => assert_eq!(n, 0, "a hang-up reads as EOF or EIO"),
        }
    }
}
