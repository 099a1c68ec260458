//! Addresses: what an id binds and resolves (IPv4 and IPv6 on the software device's ports).

use super::*;

/// An IP address and port, as a `sockaddr_in` or `sockaddr_in6` holds them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Addr {
    pub(super) v6: bool,
    /// The address; an IPv4 one in the first four bytes.
    pub(super) ip: [u8; 16],
    pub(super) port: u16,
}

impl Addr {
    /// Reads a `sockaddr_in` or `sockaddr_in6`; EINVAL for NULL or another family (librdmacm's
    /// `ucma_addrlen` gives 0 for it).
    ///
    /// # Safety
    /// `sa` is NULL or readable for the size its family names.
    pub(super) unsafe fn read(sa: *const libc::sockaddr) -> Result<Addr, Errno> {
        if sa.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: readable (caller); the family says which struct it is.
        unsafe {
            match i32::from((*sa).sa_family) {
                libc::AF_INET => {
                    let s = &*(sa as *const libc::sockaddr_in);
                    let mut ip = [0; 16];
                    ip[..4].copy_from_slice(&s.sin_addr.s_addr.to_ne_bytes());
                    Ok(Addr {
                        v6: false,
                        ip,
                        port: u16::from_be(s.sin_port),
                    })
                }
                libc::AF_INET6 => {
                    let s = &*(sa as *const libc::sockaddr_in6);
                    Ok(Addr {
                        v6: true,
                        ip: s.sin6_addr.s6_addr,
                        port: u16::from_be(s.sin6_port),
                    })
                }
                _ => Err(libc::EINVAL),
            }
        }
    }

    pub(super) fn any_of(v6: bool) -> Addr {
        Addr {
            v6,
            ip: [0; 16],
            port: 0,
        }
    }

    pub(super) fn is_any(&self) -> bool {
        self.ip == [0; 16]
    }

    /// 127.0.0.0/8 or ::1 (or ::ffff:127.x.y.z).
    fn is_loopback(&self) -> bool {
        if !self.v6 {
            return self.ip[0] == 127;
        }
        let mut one = [0u8; 16];
        one[15] = 1;
        self.ip == one
            || (self.ip[..10] == [0; 10] && self.ip[10..12] == [0xff; 2] && self.ip[12] == 127)
    }

    /// Whether the address belongs to the software device (binding or resolving it works).
    pub(super) fn is_local(&self) -> bool {
        self.is_any() || self.is_loopback()
    }

    pub(super) fn with_port(mut self, port: u16) -> Addr {
        self.port = port;
        self
    }

    pub(super) fn same_ip(&self, o: &Addr) -> bool {
        self.v6 == o.v6 && self.ip == o.ip
    }

    /// Writes the address as a `sockaddr_in` or `sockaddr_in6` (the rest zeroed).
    pub(super) fn store(&self) -> libc::sockaddr_storage {
        // SAFETY: sockaddr_storage is plain C data; all-zero is valid.
        let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        if self.v6 {
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            let s = unsafe { &mut *(&mut st as *mut _ as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = self.port.to_be();
            s.sin6_addr.s6_addr = self.ip;
        } else {
            // SAFETY: as above, for sockaddr_in.
            let s = unsafe { &mut *(&mut st as *mut _ as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = self.port.to_be();
            s.sin_addr.s_addr =
                u32::from_ne_bytes([self.ip[0], self.ip[1], self.ip[2], self.ip[3]]);
        }
        st
    }
}
