//! Admin users (`xxl_job_user`).

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::support::like;
use crate::store::{Page, Paged, StoreError, User, UserFilter, UserId, UserRow, UserStore};

macro_rules! user_select {
    () => {
        "SELECT id, username, password, token, role, permission FROM xxl_job_user"
    };
}

static INSERT_USER: Sql = Sql::new(
    "INSERT INTO xxl_job_user (username, password, token, role, permission) VALUES (?, ?, ?, ?, ?) RETURNING id",
);
static UPDATE_USER: Sql = Sql::new(
    "UPDATE xxl_job_user SET username = ?, password = ?, token = ?, role = ?, permission = ? WHERE id = ?",
);
static DELETE_USER: Sql = Sql::new("DELETE FROM xxl_job_user WHERE id = ?");
static LOAD_USER: Sql = Sql::new(concat!(user_select!(), " WHERE id = ?"));
static FIND_USER: Sql = Sql::new(concat!(user_select!(), " WHERE username = ?"));

fn push_user_filter<'a>(q: &mut QueryBuf<'a>, filter: &'a UserFilter) {
    q.push(" WHERE 1 = 1");
    if let Some(name) = &filter.username {
        q.push(" AND username ILIKE ").bind(like(name));
    }
    if let Some(role) = filter.role {
        q.push(" AND role = ").bind(role);
    }
}

#[async_trait]
impl UserStore for SqlStore {
    async fn add_user(&self, user: &User) -> Result<UserId, StoreError> {
        let args = args![&user.username, &user.password, &user.token, user.role, &user.permission];
        Ok(UserId(self.ex().insert_id(&INSERT_USER, &args).await?))
    }

    async fn update_user(&self, id: UserId, user: &User) -> Result<bool, StoreError> {
        let args = args![&user.username, &user.password, &user.token, user.role, &user.permission, id];
        Ok(self.ex().execute(&UPDATE_USER, &args).await? > 0)
    }

    async fn delete_user(&self, id: UserId) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&DELETE_USER, &args![id]).await? > 0)
    }

    async fn load_user(&self, id: UserId) -> Result<Option<UserRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_USER, &args![id]).await
    }

    async fn find_user(&self, username: &str) -> Result<Option<UserRow>, StoreError> {
        self.ex().fetch_optional(&FIND_USER, &args![username]).await
    }

    async fn page_users(&self, filter: &UserFilter, page: Page) -> Result<Paged<UserRow>, StoreError> {
        let mut count = QueryBuf::new("SELECT COUNT(*) FROM xxl_job_user");
        push_user_filter(&mut count, filter);
        let total: i64 = self.ex().fetch_one::<(i64,)>(&count, count.args()).await?.0;
        let mut rows = QueryBuf::new(user_select!());
        push_user_filter(&mut rows, filter);
        rows.push(" ORDER BY username ASC, id ASC LIMIT ").bind(i64::from(page.limit));
        rows.push(" OFFSET ").bind(i64::from(page.offset));
        let rows = self.ex().fetch_all(&rows, rows.args()).await?;
        Ok(Paged { rows, total: u64::try_from(total).unwrap_or(0) })
    }
}
