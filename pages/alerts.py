"""Alerts: what the monitor notified, why (the data that triggered it), where it went, and what is still active."""

import streamlit as st

from ui import alerts_data, filters, page

c = page.ctx()
st.title("Alerts")
page.require_data(c)

if not alerts_data.has_tables(c.path):
    st.info("This store has no alert tables yet. They appear once the monitor (or `framewatch alerts`) runs with "
            "the current version; configure rules under [alerts] in framewatch.toml (see framewatch.example.toml).")
    st.stop()

st.caption("Each alert is stored with the numbers that triggered it and a link to the view. A condition that stays "
           "true is notified once (then again only after alerts.repeat_minutes); scores are audit signals for human "
           "review, not proof of harm.")

rules = alerts_data.rules_seen(c.path)
chosen_rules = st.multiselect("Rules", rules, default=[r for r in filters.param("rule", "").split(",") if r in rules])
statuses = st.multiselect("Delivery status", ["sent", "partial", "failed", "stored", "rate_limited"])
filters.set_param("rule", ",".join(chosen_rules))
table = alerts_data.alerts(c.path, tuple(chosen_rules), tuple(statuses))

m = st.columns(4)
m[0].metric("Alerts", len(table))
m[1].metric("Delivery failed", int((table["status"] == "failed").sum()))
m[2].metric("Rate-limited", int((table["status"] == "rate_limited").sum()))
active = alerts_data.active_conditions(c.path)
m[3].metric("Conditions active now", len(active))

if table.empty:
    st.info("No alert yet for this selection. Rules are evaluated after every monitoring cycle.")
    st.stop()

shown = table[["created_at", "severity", "status", "rule", "title", "deliveries", "link", "id"]]
event = page.table(c, shown, "alerts", selectable=True, column_config={
    "link": st.column_config.LinkColumn("view", display_text="open"),
    "id": st.column_config.TextColumn("alert id"),
})
wanted = filters.param("alert")
row = page.selected_row(event, shown)
alert_id = str(row["id"]) if row is not None else (wanted if wanted in set(table["id"]) else str(table.iloc[0]["id"]))
filters.set_param("alert", alert_id)
alert = table[table["id"] == alert_id].iloc[0]

st.subheader("Alert")
st.markdown(f"**{alert['severity']}** · {alert['created_at']} · rule `{alert['rule']}` ({alert['kind']}) · "
            f"status **{alert['status']}**")
page.safe(alert["title"])
page.safe(alert["message"])
if alert["link"]:
    st.link_button("Open the view that triggered it", alert["link"], icon=":material/open_in_new:")
st.markdown("Data that triggered it")
st.json(alerts_data.data_of(alert["data_json"]))
st.markdown("Deliveries")
st.dataframe(alerts_data.deliveries(c.path, alert_id), hide_index=True)

if not active.empty and not c.present:
    st.subheader("Active conditions")
    st.caption("Notified once; quiet until they clear (or alerts.repeat_minutes pass).")
    st.dataframe(active, hide_index=True)
