{{ config(materialized='materialized_view') }}
select c.city, count(*) as orders, sum(o.amount) as amount
from {{ ref('customers') }} c join {{ ref('orders') }} o on o.customer_id = c.id
group by c.city
