//! Where a QP sends: address vectors (AddressVector, GlobalRoute, Mtu), and a port's GIDs
//! (ibv_query_gid).

use super::*;

/// A path MTU (`enum ibv_mtu`), ordered by size.
///
/// ```
/// use typed_verbs::Mtu;
/// assert!(Mtu::Mtu1024 < Mtu::Mtu4096);
/// assert_eq!(Mtu::Mtu1024.min(Mtu::Mtu4096), Mtu::Mtu1024); // a connection takes the smaller
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum Mtu {
    Mtu256 = 1,
    Mtu512 = 2,
    Mtu1024 = 3,
    Mtu2048 = 4,
    Mtu4096 = 5,
}

/// With the `serde` feature, an MTU is written as its size in bytes (`1024`, not `enum
/// ibv_mtu`'s 3); reading any other number than 256, 512, 1024, 2048 or 4096 is an error.
///
/// ```
/// use typed_verbs::Mtu;
/// assert_eq!(serde_json::to_string(&Mtu::Mtu4096).unwrap(), "4096");
/// assert_eq!(serde_json::from_str::<Mtu>("1024").unwrap(), Mtu::Mtu1024);
/// assert!(serde_json::from_str::<Mtu>("1500").is_err());
/// ```
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl serde::Serialize for Mtu {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_u16(128 << (*self as u16))
    }
}

/// Reads an MTU's size in bytes, as [`Serialize`](serde::Serialize) writes it.
///
/// ```
/// use typed_verbs::Mtu;
/// let e = serde_json::from_str::<Mtu>("3").unwrap_err(); // enum ibv_mtu's value, not bytes
/// assert!(e.to_string().contains("256, 512, 1024, 2048 or 4096"), "{e}");
/// ```
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> serde::Deserialize<'de> for Mtu {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Mtu, D::Error> {
        use serde::de::{Error, Unexpected};
        // The type `serialize` writes, so fixed-width binary formats read back what they wrote.
        let bytes = u16::deserialize(d)?;
        Ok(match bytes {
            256 => Mtu::Mtu256,
            512 => Mtu::Mtu512,
            1024 => Mtu::Mtu1024,
            2048 => Mtu::Mtu2048,
            4096 => Mtu::Mtu4096,
            _ => {
                return Err(D::Error::invalid_value(
                    Unexpected::Unsigned(u64::from(bytes)),
                    &"an MTU in bytes: 256, 512, 1024, 2048 or 4096",
                ))
            }
        })
    }
}

/// The global route of an address vector (`struct ibv_global_route`); RoCE devices need one.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?;
/// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// # let _ = grh;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalRoute {
    /// The destination GID.
    pub dgid: Gid,
    /// Flow label: 20 bits (0..=0xFFFFF; 0: none), checked before the call.
    pub flow_label: u32,
    /// The local GID table index to send from.
    pub sgid_index: u8,
    /// Hop limit: every `u8` is valid (the GRH's HopLmt, the IP TTL on RoCE v2).
    pub hop_limit: u8,
    /// Traffic class: every `u8` is valid (the GRH's TClass; DSCP and ECN on RoCE v2).
    pub traffic_class: u8,
}

/// Where a connected QP sends (`struct ibv_ah_attr`).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?;
/// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) };
/// # let _ = av;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressVector {
    /// Destination LID (InfiniBand; 0 on RoCE).
    pub dlid: u16,
    /// Service level: 4 bits (0..=15), checked before the call.
    pub sl: u8,
    /// Source path bits.
    pub src_path_bits: u8,
    /// Static rate: an `enum ibv_rate` value, 0..=24 (0, `IBV_RATE_MAX`: the port's current
    /// rate), checked before the call.
    pub static_rate: u8,
    /// The local port.
    pub port_num: u8,
    /// The global route; required on RoCE.
    pub grh: Option<GlobalRoute>,
}

impl AddressVector {
    pub(crate) fn to_sys(self) -> sys::ibv_ah_attr {
        let grh = self.grh.unwrap_or(GlobalRoute {
            dgid: Gid([0; 16]),
            flow_label: 0,
            sgid_index: 0,
            hop_limit: 0,
            traffic_class: 0,
        });
        sys::ibv_ah_attr {
            grh: sys::ibv_global_route {
                dgid: sys::ibv_gid { raw: grh.dgid.0 },
                flow_label: grh.flow_label,
                sgid_index: grh.sgid_index,
                hop_limit: grh.hop_limit,
                traffic_class: grh.traffic_class,
            },
            dlid: self.dlid,
            sl: self.sl,
            src_path_bits: self.src_path_bits,
            static_rate: self.static_rate,
            is_global: self.grh.is_some() as u8,
            port_num: self.port_num,
        }
    }
}

impl Context {
    /// `ibv_query_gid`: the GID at `index` of `port`. An index inside the port's table that
    /// holds no GID gives a zero GID (as rdma-core's `ibv_query_gid`, "Preserve API behavior
    /// for empty GID").
    ///
    /// # Errors
    /// `OutOfRange` before the call for a port outside 1..=`phys_port_cnt` (`port_num`) or an
    /// index at or past the port's `gid_tbl_len` (`index`, as `ibv_query_port` reports it, read
    /// once per context; the kernel's rdma_get_gid_attr refuses it with EINVAL); the device's
    /// errno otherwise. (A zero GID is what the device reports; [`Qp::endpoint`], which makes
    /// an address of it, refuses it with [`ErrorKind::EmptyGid`].)
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let gid = ctx.query_gid(1, 0)?;
    /// println!("{:02x?}", gid.0);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query_gid(&self, port: u8, index: u32) -> Result<Gid> {
        self.check_port(Verb::QueryGid, port)?;
        // SAFETY: a live context. The table's length is read once per context.
        let tables = unsafe { crate::device::port_tables(self.as_raw()) }
            .map_err(|e| Error::os(Verb::QueryPort, e))?;
        let table = tables
            .get(usize::from(port) - 1)
            .map_or(0, |p| p.gid_tbl_len);
        let out = || {
            Error::range(
                Verb::QueryGid,
                "index",
                index.into(),
                0,
                table.saturating_sub(1).into(),
            )
        };
        if index >= table {
            return Err(out());
        }
        let mut g = sys::ibv_gid { raw: [0; 16] };
        let index = i32::try_from(index).map_err(|_| out())?;
        // SAFETY: a live context; `g` valid for writes.
        unsafe { backend::of(self.as_raw()).query_gid(self.as_raw(), port, index, &mut g) }
            .map_err(|e| Error::os(Verb::QueryGid, e))?;
        // SAFETY: both members of the union are 16 plain bytes.
        Ok(Gid(unsafe { g.raw }))
    }
}
