//! Loopback peers: address vectors to the device's own GIDs, and QP pairs brought up on one device.

use typed_verbs::{AddressVector, Context, Gid, GlobalRoute};

/// The address vector of a loopback peer on port 1: a route to `gid` (RoCE devices, rxe among
/// them, need one) from the local GID at `sgid_index`, hop limit 1.
pub fn av_to(gid: Gid, sgid_index: u8) -> AddressVector {
    AddressVector {
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        port_num: 1,
        grh: Some(GlobalRoute {
            dgid: gid,
            flow_label: 0,
            sgid_index,
            hop_limit: 1,
            traffic_class: 0,
        }),
    }
}

/// [`av_to`] the context's own GID at index 0 of port 1: a QP's peer on the same device.
pub fn loopback_av(ctx: &Context) -> AddressVector {
    av_to(ctx.query_gid(1, 0).expect("the port's GID 0"), 0)
}
