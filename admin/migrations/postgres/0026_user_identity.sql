-- jobwheel addition: who signs in through a single sign-on provider (docs/sso.md). A user
-- created at a first OpenID Connect or LDAP login is found again by (provider, subject) -- the
-- provider's stable id for the person, not the name, which a provider may reuse or change -- so a
-- local account that happens to carry the same name is never taken over.

CREATE TABLE jobwheel_user_identity (
  provider varchar(32) NOT NULL,
  subject varchar(255) NOT NULL,
  user_id integer NOT NULL,
  created_ms bigint NOT NULL,
  PRIMARY KEY (provider, subject)
);
CREATE INDEX i_user_identity_user ON jobwheel_user_identity (user_id);
