//! What ROS 2 accepts, checked before anything starts: the domain id (`ROS_DOMAIN_ID`), node
//! and topic names, and a network interface DDS discovery can use. Every error names the flag
//! or variable and the fix.
//!
//! ```
//! use preempt_ros2::names::{check_topic, parse_domain_id};
//! assert_eq!(parse_domain_id("42", "ROS_DOMAIN_ID"), Ok(42));
//! assert!(parse_domain_id("233", "ROS_DOMAIN_ID").is_err());
//! assert!(check_topic("/gimbal/joint_states").is_ok());
//! assert!(check_topic("/gimbal//setpoint").is_err());
//! ```

/// The largest domain id: RTPS maps domain `d` to UDP ports `7400 + 250·d + …`, and
/// `d = 232` is the last whose ports stay below 65 535 (DDSI-RTPS 2.5 §9.6.1.1; ROS 2's
/// "The ROS_DOMAIN_ID" concept page).
pub const MAX_DOMAIN_ID: u16 = 232;
/// The largest domain id whose ports stay below Linux's ephemeral range (32 768..): ROS 2's
/// docs call 0..=101 safe on Linux.
pub(crate) const MAX_SAFE_DOMAIN_ID: u16 = 101;
/// The longest topic name: rmw's `RMW_TOPIC_MAX_NAME_LENGTH` (255 less the `rt/` prefix and
/// room for a suffix).
pub const MAX_TOPIC_LEN: usize = 247;

/// Parses a domain id given as `what` (a flag or `ROS_DOMAIN_ID`).
///
/// # Errors
/// Not a number, or above [`MAX_DOMAIN_ID`].
pub fn parse_domain_id(s: &str, what: &str) -> Result<u16, String> {
    let id: u32 = s.trim().parse().map_err(|_| {
        format!("{what}={s}: expected a ROS 2 domain id, an integer 0..={MAX_DOMAIN_ID} (e.g. 0)")
    })?;
    u16::try_from(id)
        .ok()
        .filter(|d| *d <= MAX_DOMAIN_ID)
        .ok_or_else(|| {
            format!(
                "{what}={s}: out of range: a ROS 2 domain id is 0..={MAX_DOMAIN_ID} (RTPS ports \
                 7400 + 250 x id must stay below 65535); 0..={MAX_SAFE_DOMAIN_ID} is safe on Linux"
            )
        })
}

/// The domain id from `ROS_DOMAIN_ID` as ROS 2 reads it: unset or empty is domain 0.
///
/// # Errors
/// A value [`parse_domain_id`] refuses.
pub(crate) fn domain_id_from_env() -> Result<u16, String> {
    match std::env::var("ROS_DOMAIN_ID") {
        Ok(s) if !s.trim().is_empty() => parse_domain_id(&s, "ROS_DOMAIN_ID"),
        _ => Ok(0),
    }
}

/// Checks a topic name against ROS 2's rules (design.ros2.org, "Topic and Service name
/// mapping to DDS"), restricted to absolute names: it starts with `/`; its tokens, separated by
/// single `/`, are non-empty, of `[A-Za-z0-9_]`, do not start with a digit and have no `__`;
/// it does not end with `/`; it is at most [`MAX_TOPIC_LEN`] characters. (`~` and `{}`
/// substitutions are refused: preempt's topics do not belong to a node's private namespace.)
///
/// # Errors
/// What is wrong, with a corrected example.
pub fn check_topic(name: &str) -> Result<(), String> {
    let fix = "e.g. /gimbal/setpoint";
    let Some(rel) = name.strip_prefix('/') else {
        return Err(format!(
            "topic '{name}': ROS 2 topic names here are absolute: start with '/', {fix}"
        ));
    };
    if name.len() > MAX_TOPIC_LEN {
        return Err(format!(
            "topic '{name}': longer than {MAX_TOPIC_LEN} characters, ROS 2's limit"
        ));
    }
    if rel.is_empty() || rel.ends_with('/') {
        return Err(format!(
            "topic '{name}': a ROS 2 topic name does not end with '/', {fix}"
        ));
    }
    for token in rel.split('/') {
        if token.is_empty() {
            return Err(format!("topic '{name}': ROS 2 rejects repeated '/', {fix}"));
        }
        if let Some(c) = token
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
        {
            return Err(format!(
                "topic '{name}': ROS 2 topic names have only letters, digits, '_' and '/', not \
                 '{c}', {fix}"
            ));
        }
        if token.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!(
                "topic '{name}': a ROS 2 name token does not start with a digit ('{token}'), {fix}"
            ));
        }
        if token.contains("__") {
            return Err(format!(
                "topic '{name}': ROS 2 rejects repeated '_' ('{token}'), {fix}"
            ));
        }
    }
    Ok(())
}

/// Checks a node name (`[A-Za-z_][A-Za-z0-9_]*`) and namespace (`/` or an absolute name as
/// for topics).
///
/// # Errors
/// What is wrong.
pub(crate) fn check_node(namespace: &str, name: &str) -> Result<(), String> {
    let ok_start = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if !ok_start || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "node name '{name}': ROS 2 node names are [A-Za-z_][A-Za-z0-9_]*, e.g. preempt_gimbal"
        ));
    }
    if namespace != "/" {
        check_topic(namespace).map_err(|e| format!("node namespace: {e}"))?;
    }
    Ok(())
}

/// The network interfaces of this process's network namespace that are up and
/// multicast-capable (getifaddrs(3): `/sys/class/net` would show the namespace sysfs was
/// mounted in instead): RTPS discovery (SPDP) announces participants on multicast
/// 239.255.0.1, so DDS finds no peer without one.
///
/// # Errors
/// getifaddrs fails.
pub(crate) fn multicast_interfaces() -> std::io::Result<Vec<String>> {
    use nix::net::if_::InterfaceFlags;
    let mut up: Vec<String> = nix::ifaddrs::getifaddrs()
        .map_err(std::io::Error::from)?
        .filter(|i| {
            i.flags
                .contains(InterfaceFlags::IFF_UP | InterfaceFlags::IFF_MULTICAST)
        })
        .map(|i| i.interface_name)
        .collect();
    up.sort();
    up.dedup();
    Ok(up)
}

/// Checks that DDS has an interface to discover peers on.
///
/// # Errors
/// None is up with multicast, naming the fix.
pub(crate) fn check_network() -> Result<Vec<String>, String> {
    let up = multicast_interfaces()
        .map_err(|e| format!("--ros2: cannot list the network interfaces: {e}"))?;
    if up.is_empty() {
        return Err(
            "--ros2: no network interface is up with multicast, and DDS discovery \
                    (RTPS SPDP, multicast 239.255.0.1) needs one: bring one up, e.g. `ip link \
                    set lo up multicast on` for this machine only"
                .into(),
        );
    }
    Ok(up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_ids_outside_rtps_port_range_are_refused() {
        assert_eq!(parse_domain_id("0", "ROS_DOMAIN_ID"), Ok(0));
        assert_eq!(parse_domain_id(" 232 ", "ROS_DOMAIN_ID"), Ok(232));
        let e = parse_domain_id("233", "ROS_DOMAIN_ID").unwrap_err();
        assert!(
            e.contains("ROS_DOMAIN_ID=233") && e.contains("0..=232"),
            "{e}"
        );
        assert!(
            parse_domain_id("-1", "--domain")
                .unwrap_err()
                .contains("--domain")
        );
        assert!(parse_domain_id("99999999999", "x").is_err());
        assert!(parse_domain_id("seven", "x").is_err());
    }

    #[test]
    fn topic_names_follow_ros2_rules() {
        for ok in ["/a", "/gimbal/joint_states", "/uav/odom", "/_x/y2"] {
            assert!(check_topic(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("gimbal/setpoint", "absolute"),
            ("/", "end with"),
            ("/gimbal/", "end with"),
            ("/gimbal//setpoint", "repeated '/'"),
            ("/gimbal/set-point", "'-'"),
            ("/gimbal/2axis", "digit"),
            ("/gimbal/set__point", "repeated '_'"),
            ("/gimbal/~", "'~'"),
        ] {
            let e = check_topic(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert!(check_topic(&format!("/{}", "a".repeat(MAX_TOPIC_LEN))).is_err());
    }

    #[test]
    fn node_names_follow_ros2_rules() {
        assert!(check_node("/", "preempt_gimbal").is_ok());
        assert!(check_node("/robot1", "preempt_gimbal").is_ok());
        assert!(check_node("/", "preempt-gimbal").is_err());
        assert!(check_node("/", "1node").is_err());
        assert!(check_node("robot", "n").is_err());
    }

    #[test]
    fn interfaces_listed_are_up_with_multicast_per_sysfs() {
        // In the namespace sysfs shows (this test's own), the flags agree with sysfs.
        for name in multicast_interfaces().unwrap() {
            let flags = std::fs::read_to_string(format!("/sys/class/net/{name}/flags")).unwrap();
            let f = u32::from_str_radix(flags.trim().trim_start_matches("0x"), 16).unwrap();
            assert_eq!(f & 0x1001, 0x1001, "{name}: IFF_UP | IFF_MULTICAST");
        }
    }
}
