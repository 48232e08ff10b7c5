from django.urls import path

from . import views

urlpatterns = [
    path("computers/<str:computer>/tools/<str:tool_name>", views.call_tool),
]
