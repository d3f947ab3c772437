//! MySQL/MariaDB: admin users.

use async_trait::async_trait;
use sqlx::{MySql, QueryBuilder};

use super::{MySqlStore, inserted_id};
use crate::store::support::like;
use crate::store::{Page, Paged, StoreError, User, UserFilter, UserId, UserRow, UserStore};

const INSERT_USER: &str = "INSERT INTO xxl_job_user (username, password, token, role, permission) \
    VALUES (?, ?, ?, ?, ?)";
const UPDATE_USER: &str = "UPDATE xxl_job_user SET username = ?, password = ?, token = ?, \
    role = ?, permission = ? WHERE id = ?";
const DELETE_USER: &str = "DELETE FROM xxl_job_user WHERE id = ?";
const LOAD_USER: &str =
    "SELECT id, username, password, token, role, permission FROM xxl_job_user WHERE id = ?";
const FIND_USER: &str =
    "SELECT id, username, password, token, role, permission FROM xxl_job_user WHERE username = ?";

fn push_user_filter(qb: &mut QueryBuilder<'_, MySql>, filter: &UserFilter) {
    qb.push(" WHERE 1 = 1");
    if let Some(name) = &filter.username {
        qb.push(" AND username LIKE ").push_bind(like(name));
    }
    if let Some(role) = filter.role {
        qb.push(" AND role = ").push_bind(role);
    }
}

#[async_trait]
impl UserStore for MySqlStore {
    async fn add_user(&self, user: &User) -> Result<UserId, StoreError> {
        let done = sqlx::query(INSERT_USER)
            .bind(&user.username)
            .bind(&user.password)
            .bind(&user.token)
            .bind(user.role)
            .bind(&user.permission)
            .execute(&self.pool)
            .await?;
        Ok(UserId(inserted_id(&done)?))
    }

    async fn update_user(&self, id: UserId, user: &User) -> Result<bool, StoreError> {
        let done = sqlx::query(UPDATE_USER)
            .bind(&user.username)
            .bind(&user.password)
            .bind(&user.token)
            .bind(user.role)
            .bind(&user.permission)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_user(&self, id: UserId) -> Result<bool, StoreError> {
        Ok(sqlx::query(DELETE_USER).bind(id).execute(&self.pool).await?.rows_affected() > 0)
    }

    async fn load_user(&self, id: UserId) -> Result<Option<UserRow>, StoreError> {
        Ok(sqlx::query_as(LOAD_USER).bind(id).fetch_optional(&self.pool).await?)
    }

    async fn find_user(&self, username: &str) -> Result<Option<UserRow>, StoreError> {
        Ok(sqlx::query_as(FIND_USER).bind(username).fetch_optional(&self.pool).await?)
    }

    async fn page_users(&self, filter: &UserFilter, page: Page) -> Result<Paged<UserRow>, StoreError> {
        let mut count = QueryBuilder::new("SELECT COUNT(*) FROM xxl_job_user");
        push_user_filter(&mut count, filter);
        let total: i64 = count.build_query_scalar().fetch_one(&self.pool).await?;
        let mut rows =
            QueryBuilder::new("SELECT id, username, password, token, role, permission FROM xxl_job_user");
        push_user_filter(&mut rows, filter);
        rows.push(" ORDER BY username ASC, id ASC LIMIT ").push_bind(i64::from(page.limit));
        rows.push(" OFFSET ").push_bind(i64::from(page.offset));
        let rows = rows.build_query_as().fetch_all(&self.pool).await?;
        Ok(Paged { rows, total: u64::try_from(total).unwrap_or(0) })
    }
}
