//! Procedural macros of typed-verbs. Use them through the `typed_verbs` crate.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Ident, Token};

/// The flags of ibv_create_cq_ex(3), in the order of `WcFlagSet`'s parameters.
const FLAGS: [&str; 11] = [
    "BYTE_LEN",
    "IMM",
    "QP_NUM",
    "SRC_QP",
    "SLID",
    "SL",
    "DLID_PATH_BITS",
    "COMPLETION_TIMESTAMP",
    "CVLAN",
    "FLOW_TAG",
    "COMPLETION_TIMESTAMP_WALLCLOCK",
];

/// How many of `FLAGS` make up `STANDARD` (IBV_WC_STANDARD_FLAGS).
const STANDARD: usize = 7;

struct FlagList(Punctuated<Ident, Token![|]>);

impl Parse for FlagList {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        Ok(FlagList(Punctuated::parse_terminated(input)?))
    }
}

/// `wc_flags!(BYTE_LEN | IMM)`: the `typed_verbs::WcFlagSet` type with those flags.
/// See the re-export in `typed_verbs` for the names.
#[proc_macro]
pub fn wc_flags(input: TokenStream) -> TokenStream {
    let list = syn::parse_macro_input!(input as FlagList);
    let mut on = [false; 11];
    let mut errors: Option<syn::Error> = None;
    for id in list.0.iter() {
        let name = id.to_string();
        let name = name.strip_prefix("IBV_WC_EX_WITH_").unwrap_or(&name);
        if name == "STANDARD" {
            on[..STANDARD].iter_mut().for_each(|b| *b = true);
        } else if let Some(i) = FLAGS.iter().position(|f| *f == name) {
            on[i] = true;
        } else {
            let e = syn::Error::new(
                id.span(),
                format!(
                    "unknown wc flag `{name}`: the flags of ibv_create_cq_ex are {}, and STANDARD",
                    FLAGS.join(", ")
                ),
            );
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        }
    }
    let krate = Ident::new("typed_verbs", Span::call_site());
    let mut args: Vec<proc_macro2::TokenStream> = on.iter().map(|b| quote!(#b)).collect();
    if let Some(e) = errors {
        // Report the error, but still expand to a valid flag set (of the known names), so the
        // unknown name is the only error the user sees.
        let err = e.to_compile_error();
        let first = on[0];
        args[0] = quote!({ #err; #first });
    }
    quote!(::#krate::WcFlagSet<#(#args),*>).into()
}
