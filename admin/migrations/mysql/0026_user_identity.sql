-- jobwheel addition: who signs in through a single sign-on provider (docs/sso.md). A user
-- created at a first OpenID Connect or LDAP login is found again by (provider, subject) -- the
-- provider's stable id for the person, not the name, which a provider may reuse or change -- so a
-- local account that happens to carry the same name is never taken over.

CREATE TABLE IF NOT EXISTS `jobwheel_user_identity` (
  `provider` varchar(32) NOT NULL,
  `subject` varchar(255) NOT NULL,
  `user_id` int(11) NOT NULL,
  `created_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`provider`, `subject`),
  KEY `i_user_identity_user` (`user_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
