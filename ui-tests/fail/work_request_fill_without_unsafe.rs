// Calling the hidden `WorkRequestFor::fill` from safe code with a pointer that is no QP: it
// reads the QP (a UD request's PD check), so it is an unsafe method.
use typed_verbs::wr::WorkRequestFor;
use typed_verbs::{QpCap, Rc, SendWr};

fn main() {
    let wr = SendWr::<Rc>::send_inline(1, b"x");
    let mut raw = unsafe { std::mem::zeroed() };
    let mut inline = unsafe { std::mem::zeroed() };
    let caps: QpCap = unsafe { std::mem::zeroed() };
    let _ = WorkRequestFor::<Rc, 1>::fill(&wr, std::ptr::dangling_mut(), &caps, &mut raw, &mut inline);
}
